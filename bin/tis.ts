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
import { basename, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createDashboardClient } from '../client/index.js';
import type { Command, Io, OptionSpec } from './commands/command.js';
import { ApiRefusal, UsageError } from './commands/command.js';
import * as modules from './commands/index.js';
import { columns, layoutWidth, wrap } from './layout.js';
import { closest } from './suggest.js';

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

function optionRows(options: ReadonlyArray<[string, OptionSpec & { short?: string }]>): Array<[string, string]> {
  return options.map(([name, spec]) => [`${spec.short ? `-${spec.short}, ` : ''}${optionText(name, spec)}`, spec.description]);
}

function globalOptionLines(width: number): string[] {
  return columns(optionRows(Object.entries(GLOBAL_OPTIONS)), width);
}

/** A synopsis or sentence too long for one line, continued under itself. */
function wrapped(prefix: string, text: string, width: number, indent = prefix.length): string[] {
  return wrap(text, width, indent, prefix.length).map((l, i) => (i === 0 ? `${prefix}${l}` : l));
}

export function usage(width = layoutWidth(undefined)): string {
  const lines = ['Usage: tis <command> [options]', '', "Operator commands for the Tool Integration Service's dashboard API.", '', 'Commands:'];
  for (const command of COMMANDS) {
    lines.push(...wrapped('  ', synopsis(command), width, 6), ...wrapped('      ', `${command.summary} (${TOKENS[command.token]})`, width));
    for (const alias of command.aliases ?? []) lines.push(`  ${alias} ...`, `      The same as "${command.name}".`);
  }
  const onStore = COMMANDS.filter((c) => c.token === 'store').map((c) => c.name);
  lines.push('', ...wrapped('', `Options of every command${onStore.length > 0 ? ` (${onStore.join(', ')}: --help only)` : ''}:`, width), ...globalOptionLines(width), '');
  lines.push('"tis <command> --help" shows one command\'s options in full.');
  lines.push('A refused call prints the service\'s message and exits 1; a wrong command line exits 2.');
  return `${lines.join('\n')}\n`;
}

/** One command's help; `withGlobal: false` leaves the options of every command to the caller (group help). */
export function commandUsage(command: Command, width = layoutWidth(undefined), withGlobal = true): string {
  const lines = [...wrapped('Usage: tis ', synopsis(command), width, 4), '', ...wrap(command.summary, width), `Takes ${TOKENS[command.token]}.`];
  const options = Object.entries(command.options ?? {});
  if (options.length > 0) lines.push('', 'Options:', ...columns(optionRows(options), width));
  if (command.token === 'store') {
    lines.push('', 'Environment (the service\'s own settings):', ...command.environment.map((e) => `  ${e}`));
    lines.push('', ...columns(optionRows([['help', GLOBAL_OPTIONS['help']!]]), width));
    return `${lines.join('\n')}\n`;
  }
  if (withGlobal) lines.push('', 'Options of every command:', ...globalOptionLines(width));
  return `${lines.join('\n')}\n`;
}

/** `tis tools --help`: every command of the group, then the options they all take, once. */
export function groupUsage(members: readonly Command[], width = layoutWidth(undefined)): string {
  const parts = members.map((c) => commandUsage(c, width, false));
  if (members.some((c) => c.token !== 'store')) {
    const onStore = members.filter((c) => c.token === 'store').map((c) => c.name);
    parts.push(`${[`Options of every command${onStore.length > 0 ? ` but ${onStore.join(', ')}` : ''}:`, ...globalOptionLines(width)].join('\n')}\n`);
  }
  return parts.join('\n');
}

/**
 * How this process was started, as its user would type it again, so an error names a command that runs:
 * `npm run -s tis --` in a checkout, `npx tis` through npx, `tis` once installed, else the node command line.
 */
export function invokedAs(env: NodeJS.ProcessEnv, script: string | undefined, execArgv: readonly string[], cwd: string): string {
  if (env['npm_lifecycle_event'] === 'tis') return 'npm run -s tis --';
  if (script === undefined) return 'tis';
  if (basename(script) === 'tis') return env['npm_command'] === 'exec' ? 'npx tis' : 'tis';
  if (!/[\\/]tis\.[jt]s$/.test(script)) return 'tis';
  const path = relative(cwd, script);
  return ['node', ...execArgv, path.startsWith('..') ? script : path].join(' ');
}

/** The options a command line may carry, by what can be told of its command so far. */
function knownOptions(command: Command | null): string[] {
  if (command === null) return Object.keys(allOptions());
  return [...Object.keys(command.options ?? {}), ...(command.token === 'store' ? ['help'] : Object.keys(GLOBAL_OPTIONS))];
}

/** `--frob` is not an option here: say so, with the closest one it may have meant. */
function unknownOption(option: string, command: Command | null): UsageError {
  const written = option.replace(/=.*$/, '');
  const suggestion = closest(written.replace(/^-+/, ''), knownOptions(command));
  const refusal = command === null ? `unknown option ${written}` : `${command.name} does not take ${written}`;
  return new UsageError(suggestion === null ? refusal : `${refusal}; did you mean --${suggestion}?`);
}

/** parseArgs' own wording (quotes unbalanced, advice about '--') in the CLI's words. */
function parseFailure(err: unknown, argv: readonly string[]): UsageError {
  const { code, message } = err as { code?: string; message: string };
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const option = /^Unknown option '([^']+)'/.exec(message)?.[1] ?? '';
    return unknownOption(option, findCommand(argv.filter((a) => !a.startsWith('-')))?.command ?? null);
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const option = /'(?:-\w, )?(--[\w-]+)/.exec(message)?.[1];
    if (option !== undefined) {
      const spec = GLOBAL_OPTIONS[option.slice(2)] ?? COMMANDS.map((c) => c.options?.[option.slice(2)]).find((o) => o !== undefined);
      if (/does not take an argument/.test(message)) return new UsageError(`${option} takes no value`);
      return new UsageError(`${option} needs a value${spec?.value ? ` (${option} ${spec.value})` : ''}`);
    }
  }
  return new UsageError(message.split('\n')[0] ?? message);
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
/**
 * Runs one command line; answers the exit status. `program` is how the user started `tis` (`invokedAs`),
 * named in the hint after a wrong command line.
 */
export async function run(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io, program = 'tis'): Promise<number> {
  const width = layoutWidth(io.width);
  // The command once known, so a wrong command line points at that command's help.
  let current: Command | null = null;
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: [...argv], options: allOptions(), allowPositionals: true, strict: true });
    } catch (err) {
      current = findCommand(argv.filter((a) => !a.startsWith('-')))?.command ?? null;
      throw parseFailure(err, argv);
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
          io.out(usage(width));
          return 0;
        }
        io.err(usage(width));
        return EXIT_USAGE;
      }
      const members = COMMANDS.filter((c) => c.name.startsWith(`${positionals[0]} `));
      // `tis lms --help`, `tis files --help`: the help of every command of the group, options in full.
      if (wantsHelp && members.length > 0 && positionals.length === 1) {
        io.out(groupUsage(members, width));
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
    current = command;
    if (wantsHelp) {
      io.out(commandUsage(command, width));
      return 0;
    }
    const allowed = Object.keys(command.options ?? {});
    for (const name of [...Object.keys(values), ...Object.keys(lists)]) {
      if (name in GLOBAL_OPTIONS && command.token !== 'store') continue;
      if (!allowed.includes(name)) throw unknownOption(`--${name}`, command);
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
      io.err(`error: ${err.detail} (HTTP ${err.status})${err.hint ? `\nhint: ${err.hint}` : ''}`);
      return EXIT_API;
    }
    if (err instanceof UsageError) {
      const help = current === null ? `${program} --help" for the commands.` : `${program} ${current.name} --help" for its options.`;
      io.err(`error: ${err.message}\nRun "${help}`);
      return EXIT_USAGE;
    }
    throw err;
  }
}

/** The process entry: `node --import tsx bin/tis.ts ...` (`npm run tis -- ...`), or the compiled `dist/bin/tis.js` (the package's `tis`). */
export async function main(): Promise<void> {
  const io: Io = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    ...(process.stdout.isTTY ? { width: process.stdout.columns } : {}),
  };
  process.exitCode = await run(process.argv.slice(2), process.env, io, invokedAs(process.env, process.argv[1], process.execArgv, process.cwd()));
}

if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
