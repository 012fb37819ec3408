#!/usr/bin/env node
/**
 * `tis`: the operators' command line for the dashboard API (openapi/dashboard/, decisions L-08, S-36), over HTTP
 * with the kit's typed dashboard client. It does nothing the API does not: every refusal is the service's,
 * printed with its `detail`, and the exit status is non-zero. The commands live in `bin/commands/`, one
 * module per area, registered in `bin/commands/index.ts`; this file parses, dispatches and prints help.
 *
 *   node --import tsx bin/tis.ts --help      (or `npm run tis -- --help` in this checkout; `tis` once the package is installed)
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createDashboardClient } from '../client/index.js';
import type { Command, Io, OptionSpec } from './commands/command.js';
import { ApiRefusal, UsageError } from './commands/command.js';
import * as modules from './commands/index.js';

export type { Io } from './commands/command.js';

/** Exit statuses: the API refused or could not be reached (1), the command line is wrong (2). */
export const EXIT_API = 1;
export const EXIT_USAGE = 2;

export const COMMANDS: readonly Command[] = Object.values(modules).flat();

const GLOBAL_OPTIONS: Readonly<Record<string, OptionSpec & { short?: string }>> = {
  url: { type: 'string', value: '<origin>', description: "The service's origin (default: $TIS_URL)." },
  token: { type: 'string', value: '<token>', description: 'The dashboard credential (default: $TIS_TOKEN).' },
  'token-file': { type: 'string', value: '<path>', description: 'Read the credential from a file, e.g. DATA_DIR/platform-token.' },
  json: { type: 'boolean', description: "Print the API's JSON answer instead of text." },
  help: { type: 'boolean', short: 'h', description: 'Show the help (of one command, after its name).' },
};

/** Every option any command takes, so one parse finds the command whatever order the words come in. */
function allOptions(): Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> {
  const all: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, spec] of Object.entries(GLOBAL_OPTIONS)) all[name] = { type: spec.type, ...(spec.short ? { short: spec.short } : {}) };
  for (const command of COMMANDS) {
    for (const [name, spec] of Object.entries(command.options ?? {})) {
      const known = all[name];
      if (known && (known.type !== spec.type || (known.multiple ?? false) !== (spec.multiple ?? false))) {
        throw new Error(`tis: option --${name} is declared differently by two commands`);
      }
      all[name] = { type: spec.type, ...(spec.multiple ? { multiple: true } : {}) };
    }
  }
  return all;
}

function namesOf(command: Command): string[] {
  return [command.name, ...(command.aliases ?? [])];
}

/** The command whose name (one or more words) the positionals start with; the longest name wins. */
function findCommand(positionals: readonly string[]): { command: Command; words: number } | null {
  let found: { command: Command; words: number } | null = null;
  for (const command of COMMANDS) {
    for (const name of namesOf(command)) {
      const words = name.split(' ');
      if (words.every((w, i) => positionals[i] === w) && (!found || words.length > found.words)) found = { command, words: words.length };
    }
  }
  return found;
}

function optionText(name: string, spec: OptionSpec): string {
  return `${spec.value ? `--${name} ${spec.value}` : `--${name}`}${spec.multiple ? ' ...' : ''}`;
}

function synopsis(command: Command): string {
  const args = (command.args ?? []).map((a) => `<${a}>`);
  const options = Object.entries(command.options ?? {}).map(([name, spec]) => `[${optionText(name, spec)}]`);
  return [command.name, ...args, ...options].join(' ');
}

const TOKENS = {
  builder: "a builder's token",
  platform: "the platform team's token",
  any: "a builder's or the platform team's token",
  store: "no token: works on the service's store, with its environment",
} as const;

function globalOptionLines(): string[] {
  return Object.entries(GLOBAL_OPTIONS).map(([name, spec]) => `  ${`${spec.short ? `-${spec.short}, ` : ''}${optionText(name, spec)}`.padEnd(24)}${spec.description}`);
}

export function usage(): string {
  const lines = ['Usage: tis <command> [options]', '', "Operator commands for the Tool Integration Service's dashboard API.", '', 'Commands:'];
  for (const command of COMMANDS) {
    lines.push(`  ${synopsis(command)}`, `      ${command.summary} (${TOKENS[command.token]})`);
    for (const alias of command.aliases ?? []) lines.push(`  ${alias} ...`, `      The same as "${command.name}".`);
  }
  const onStore = COMMANDS.filter((c) => c.token === 'store').map((c) => c.name);
  lines.push('', `Options of every command${onStore.length > 0 ? ` (${onStore.join(', ')}: --help only)` : ''}:`, ...globalOptionLines(), '');
  lines.push('"tis <command> --help" shows one command\'s options in full.');
  lines.push('A refused call prints the service\'s message and exits 1; a wrong command line exits 2.');
  return `${lines.join('\n')}\n`;
}

export function commandUsage(command: Command): string {
  const lines = [`Usage: tis ${synopsis(command)}`, '', `${command.summary}`, `Takes ${TOKENS[command.token]}.`];
  const options = Object.entries(command.options ?? {});
  if (options.length > 0) {
    lines.push('', 'Options:');
    for (const [name, spec] of options) lines.push(`  ${optionText(name, spec).padEnd(32)}${spec.description}`);
  }
  if (command.token === 'store') {
    lines.push('', 'Environment (the service\'s own settings):', ...command.environment.map((e) => `  ${e}`));
    lines.push('', `  ${'-h, --help'.padEnd(32)}${GLOBAL_OPTIONS['help']?.description ?? ''}`);
    return `${lines.join('\n')}\n`;
  }
  lines.push('', 'Options of every command:', ...globalOptionLines());
  return `${lines.join('\n')}\n`;
}

function connection(values: Record<string, unknown>, env: NodeJS.ProcessEnv): { url: string; token: string } {
  const url = (values['url'] as string | undefined) ?? env['TIS_URL'];
  if (!url) throw new UsageError('the service URL is missing: pass --url or set TIS_URL');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url must be an absolute http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new UsageError(`--url must be an http(s) URL, got ${JSON.stringify(url)}`);
  let token = (values['token'] as string | undefined) ?? env['TIS_TOKEN'];
  const tokenFile = values['token-file'] as string | undefined;
  if (tokenFile !== undefined) {
    try {
      token = readFileSync(tokenFile, 'utf8').trim();
    } catch (err) {
      throw new UsageError(`cannot read --token-file ${tokenFile}: ${(err as Error).message}`);
    }
  }
  if (!token) throw new UsageError('the token is missing: pass --token or --token-file, or set TIS_TOKEN');
  return { url: parsed.origin, token };
}

/** Runs one command line; answers the exit status. */
export async function run(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: [...argv], options: allOptions(), allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const parsedValues = parsed.values as Record<string, string | boolean | string[] | undefined>;
    const values: Record<string, string | boolean | undefined> = {};
    const lists: Record<string, string[]> = {};
    for (const [name, value] of Object.entries(parsedValues)) {
      if (Array.isArray(value)) lists[name] = value;
      else values[name] = value;
    }
    const positionals = parsed.positionals[0] === 'help' ? parsed.positionals.slice(1) : parsed.positionals;
    const wantsHelp = values['help'] === true || parsed.positionals[0] === 'help';
    const found = findCommand(positionals);
    if (!found) {
      if (positionals.length === 0) {
        if (wantsHelp) {
          io.out(usage());
          return 0;
        }
        io.err(usage());
        return EXIT_USAGE;
      }
      const members = COMMANDS.filter((c) => c.name.startsWith(`${positionals[0]} `));
      // `tis lms --help`, `tis files --help`: the help of every command of the group, options in full.
      if (wantsHelp && members.length > 0 && positionals.length === 1) {
        io.out(members.map(commandUsage).join('\n'));
        return 0;
      }
      const group = members.map((c) => `"${c.name}"`);
      throw new UsageError(
        group.length > 0 && positionals.length === 1
          ? `${positionals[0]} needs a command: ${group.join(', ')}`
          : `unknown command ${JSON.stringify(positionals.join(' '))}`,
      );
    }
    const { command } = found;
    if (wantsHelp) {
      io.out(commandUsage(command));
      return 0;
    }
    const allowed = Object.keys(command.options ?? {});
    for (const name of [...Object.keys(values), ...Object.keys(lists)]) {
      if (name in GLOBAL_OPTIONS && command.token !== 'store') continue;
      if (!allowed.includes(name)) throw new UsageError(`${command.name} does not take --${name}`);
    }
    const expected = command.args ?? [];
    const given = positionals.slice(found.words);
    if (given.length !== expected.length) {
      throw new UsageError(`${command.name} takes ${expected.length === 0 ? 'no arguments' : expected.map((a) => `<${a}>`).join(' ')}`);
    }
    const args = Object.fromEntries(expected.map((name, i) => [name, given[i] ?? '']));
    if (command.token === 'store') return await command.run({ args, values, env, io });
    const { url, token } = connection(values, env);
    const client = createDashboardClient({ baseUrl: url, token });
    try {
      await command.run({ client, args, values, lists, json: values['json'] === true, io });
    } catch (err) {
      if (err instanceof ApiRefusal || err instanceof UsageError) throw err;
      // fetch failed: nothing answered at the URL.
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      if (cause === undefined) throw err;
      io.err(`error: cannot reach ${url}: ${cause.code ?? cause.message ?? (err as Error).message}`);
      return EXIT_API;
    }
    return 0;
  } catch (err) {
    if (err instanceof ApiRefusal) {
      io.err(`error: ${err.detail} (HTTP ${err.status})`);
      return EXIT_API;
    }
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\nRun "tis --help" for the commands.`);
      return EXIT_USAGE;
    }
    throw err;
  }
}

/** The process entry: `node --import tsx bin/tis.ts ...` (`npm run tis -- ...`), or the compiled `dist/bin/tis.js` (the package's `tis`). */
export async function main(): Promise<void> {
  const io: Io = { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`) };
  process.exitCode = await run(process.argv.slice(2), process.env, io);
}

if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
