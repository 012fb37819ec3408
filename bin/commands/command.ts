/**
 * What a `tis` command is, and the few helpers every command module shares. A module exports
 * `commands: Command[]` and is registered by one line in `index.ts`; `bin/tis.ts` parses the command line
 * against the command's own options, prints its help from the same declarations, and hands it a client.
 */
import type { DashboardClient, DashboardComponents } from '../../client/index.js';

export type Schemas = DashboardComponents['schemas'];

export interface Io {
  out(line: string): void;
  err(line: string): void;
  /** The terminal's columns, when writing to one: help is wrapped to it (at most 100). */
  width?: number;
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** The placeholder shown in help, e.g. `<url>`; absent for a boolean. */
  value?: string;
  /** A string option that may be given several times; its values are in `CommandContext.lists`. */
  multiple?: boolean;
  description: string;
}

export interface CommandContext {
  client: DashboardClient;
  /** Positional arguments by the names the command declares. */
  args: Readonly<Record<string, string>>;
  /** Options by name (`callback-url`), only those given. */
  values: Readonly<Record<string, string | boolean | undefined>>;
  /** The options declared `multiple`, every value given in order (an empty list when not given). */
  lists: Readonly<Record<string, readonly string[]>>;
  json: boolean;
  io: Io;
}

/** What a command that works on the service's own store gets: no API client, the service's environment. */
export interface StoreCommandContext {
  args: Readonly<Record<string, string>>;
  values: Readonly<Record<string, string | boolean | undefined>>;
  env: NodeJS.ProcessEnv;
  io: Io;
}

interface CommandDeclaration {
  /** One or more words: `register`, `tools list`, `sandbox place`. */
  name: string;
  /** Other names it answers to (kept for command lines written before a rename). */
  aliases?: readonly string[];
  summary: string;
  args?: readonly string[];
  options?: Readonly<Record<string, OptionSpec>>;
}

/** A command over the dashboard API. */
export interface ApiCommand extends CommandDeclaration {
  /** Who may run it, for the help: a builder's token, the platform team's, or either. */
  token: 'builder' | 'platform' | 'any';
  run(ctx: CommandContext): Promise<void>;
}

/**
 * A command that works on the service's store itself, with the service's environment (`DATA_DIR` or
 * `DATABASE_URL`, ...), not through the API: it takes no `--url` or token, and answers its own exit status.
 */
export interface StoreCommand extends CommandDeclaration {
  token: 'store';
  /** The environment it reads, for the help. */
  environment: readonly string[];
  run(ctx: StoreCommandContext): Promise<number>;
}

export type Command = ApiCommand | StoreCommand;

/** A wrong command line: exit 2 with the message. */
export class UsageError extends Error {}

/** The service's refusal, as the API worded it: exit 1. */
export class ApiRefusal extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    /** The problem's `hint`, when the service has one (decision OPS-43). */
    readonly hint?: string,
  ) {
    super(detail);
  }
}

/** The answer's data, or the API's refusal thrown. */
export function check<T>(result: { data?: T; error?: { status: number; detail: string; hint?: string } }): T {
  if (result.error) throw new ApiRefusal(result.error.status, result.error.detail, result.error.hint);
  return result.data as T;
}

/** Prints the API's JSON with `--json`, else the command's text lines. */
export function show(ctx: CommandContext, data: unknown, text: () => readonly string[]): void {
  if (ctx.json) {
    ctx.io.out(JSON.stringify(data, null, 2));
    return;
  }
  for (const line of text()) ctx.io.out(line);
}

/** A string option, checked against the spec's enum values when given. */
export function oneOf<T extends string>(value: string | boolean | undefined, option: string, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !allowed.includes(value as T)) throw new UsageError(`--${option} must be one of ${allowed.join(', ')}`);
  return value as T;
}

export function stringOption(ctx: CommandContext, name: string): string | undefined {
  const value = ctx.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** `--limit` and `--cursor`, for the list commands. */
export const PAGE_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  limit: { type: 'string', value: '<n>', description: 'Entries per page, 1 to 100 (default 20).' },
  cursor: { type: 'string', value: '<cursor>', description: 'The page after the one that printed this cursor.' },
};

export function pageQuery(ctx: CommandContext): { limit?: number; cursor?: string } {
  const limit = stringOption(ctx, 'limit');
  const cursor = stringOption(ctx, 'cursor');
  if (limit !== undefined && !/^\d+$/.test(limit)) throw new UsageError('--limit must be a whole number');
  return { ...(limit !== undefined ? { limit: Number(limit) } : {}), ...(cursor !== undefined ? { cursor } : {}) };
}

/** Tells where the next page is, on stderr so stdout stays the list. */
export function morePages(ctx: CommandContext, nextCursor: string | null): void {
  if (nextCursor !== null && !ctx.json) ctx.io.err(`More: repeat with --cursor ${nextCursor}`);
}

/** A number as people write points: at most two decimals, no trailing zeros. */
export function points(value: number): string {
  return String(Math.round(value * 100) / 100);
}

/**
 * A score as the gradebook shows it: `10 / 30 (33%)`. `fraction` is the contract's 0-to-1 score, `maximum`
 * the column's points; without them only the percentage can be said.
 */
export function scoreText(fraction: number | null, maximum: number | null): string {
  if (fraction === null) return maximum === null ? '–' : `– / ${points(maximum)}`;
  const percent = `${Math.round(fraction * 100)}%`;
  return maximum === null ? percent : `${points(fraction * maximum)} / ${points(maximum)} (${percent})`;
}

/** A score the LMS holds in points (`scoreGiven` of `scoreMaximum`), as `scoreText` shows it. */
export function gradebookScore(given: number | null, maximum: number | null): string {
  if (given === null || maximum === null || maximum <= 0) return `${given === null ? '–' : points(given)} / ${maximum === null ? '–' : points(maximum)}`;
  return `${points(given)} / ${points(maximum)} (${Math.round((given / maximum) * 100)}%)`;
}

/** A fixed-width table, for people reading a terminal. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string[] {
  if (rows.length === 0) return ['(none)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ');
  return [line(header), ...rows.map(line)];
}
