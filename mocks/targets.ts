/**
 * What `mocks/run.ts` starts, worked out from its command line without touching the network: which spec,
 * which Prism command, which port. Kept apart from the process handling so the port plan and the argument
 * rules can be tested without starting Prism.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiNames, contractVersions, currentContractVersion, type ApiName } from '../generated/index.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export type MockMode = 'mock' | 'proxy' | 'tool';

/** Tool teams keep one base URL for "the current contract" whatever its date, so it never moves. */
export const CURRENT_PORT = 4010;
/** The dashboard API is this implementation's own, outside the 4001-4031 range the archived contracts use. */
export const DASHBOARD_PORT = 4090;
/** Where a tool listens when nothing says otherwise; the derived tool-side specs name the same origin. */
export const DEFAULT_TOOL_PORT = 4100;
export const DEFAULT_HOST = '127.0.0.1';
/** `npm start`'s own default (PORT 3000, HOST 127.0.0.1). */
export const DEFAULT_UPSTREAM = 'http://127.0.0.1:3000';

/** Thrown for anything the caller typed wrong; the launcher prints the message and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export interface Plan {
  mode: MockMode;
  api: ApiName;
  /** The bundled spec Prism reads, absolute. */
  document: string;
  host: string;
  port: number;
  /** Proxy mode only: the service Prism forwards to. */
  upstream?: string;
  /** Arguments after Prism's own CLI script (the document among them is `document` before any rewrite). */
  prismArgs: string[];
  /**
   * Mock mode: the spec's origin (its first server) and the mock's own. The launcher serves a copy of the
   * document with the one replaced by the other, so every URL an example hands out (a launch's storage URLs,
   * the upload form's `url`, a signed download) points back at the mock on loopback (decision KIT-09).
   */
  rewrite?: { from: string; to: string };
  /** One line for the console: what is served, and where. */
  describe: string;
}

/**
 * The default port of each API's mock (and of its validating proxy: a tool moving from the mock to the real
 * service keeps its base URL). The current contract is always 4010; an archived contract is 4000 + its day of
 * the month (2026-08-25 → 4025, 2026-08-19 → 4019), a rule that needs no edit when a version is archived; the
 * dashboard API is 4090. Should two versions meet on one port (an archived date on the 10th, or two on the
 * same day), the older one moves up by 100 until free, so newer versions never change port.
 */
export function defaultPorts(): ReadonlyMap<ApiName, number> {
  const ports = new Map<ApiName, number>();
  const used = new Set<number>([CURRENT_PORT, DASHBOARD_PORT, DEFAULT_TOOL_PORT]);
  // contractVersions is current first, then archived newest to oldest.
  for (const version of contractVersions) {
    if (version === currentContractVersion) {
      ports.set(version, CURRENT_PORT);
      continue;
    }
    let port = 4000 + Number(version.slice(8, 10));
    while (used.has(port)) port += 100;
    used.add(port);
    ports.set(version, port);
  }
  let next = DASHBOARD_PORT;
  for (const api of apiNames) {
    if (ports.has(api)) continue;
    while ([...ports.values()].includes(next)) next++;
    ports.set(api, next);
  }
  return ports;
}

export function defaultPort(api: ApiName): number {
  return defaultPorts().get(api) ?? CURRENT_PORT;
}

function roleOf(api: ApiName): string {
  if (api === currentContractVersion) return 'current contract';
  if ((contractVersions as readonly string[]).includes(api)) return 'archived contract';
  return "this implementation's API";
}

/** Every API a mock can serve, with its role and default port, for usage text and error messages. */
export function servedApis(mode: MockMode = 'mock'): string[] {
  const names = mode === 'tool' ? contractVersions.filter((v) => existsSync(toolDocument(v))) : apiNames;
  return names.map((api) => {
    const port = mode === 'tool' ? toolDefaultPort(api) : defaultPort(api);
    return `${api} (${roleOf(api)}, port ${port})`;
  });
}

function apiDocument(api: string): string {
  return path.join(repoRoot, 'generated', api, 'openapi.json');
}

function toolDocument(api: string): string {
  return path.join(repoRoot, 'generated', api, 'tool-openapi.json');
}

/** The tool-side spec's own server URL says where a tool listens; its port is the tool mock's default. */
export function toolDefaultPort(api: string): number {
  const file = toolDocument(api);
  if (!existsSync(file)) return DEFAULT_TOOL_PORT;
  const spec = JSON.parse(readFileSync(file, 'utf8')) as { servers?: { url?: string }[] };
  const url = spec.servers?.[0]?.url;
  if (url === undefined) return DEFAULT_TOOL_PORT;
  const port = Number(new URL(url).port);
  return Number.isInteger(port) && port > 0 ? port : DEFAULT_TOOL_PORT;
}

function parsePort(value: string, where: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UsageError(`${where} must be a TCP port between 1 and 65535, got "${value}"`);
  }
  return port;
}

function parseUpstream(value: string, where: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${where} must be an http(s) URL such as ${DEFAULT_UPSTREAM}, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${where} must be an http(s) URL such as ${DEFAULT_UPSTREAM}, got "${value}"`);
  }
  // Prism appends the request path; a trailing slash would double it.
  return value.replace(/\/+$/, '');
}

export const USAGE = `Usage:
  npm run mock [-- <version>] [--port <n>] [--host <h>]
      Prism mock of a contract (default: the current one), serving the spec's examples.
  npm run mock:proxy [-- <version>] [<upstream-url>] [--port <n>] [--host <h>]
      Prism validating proxy (--errors) in front of a running service
      (upstream: the argument, else TIS_UPSTREAM, else ${DEFAULT_UPSTREAM}).
  npm run mock:tool [-- <version>] [--port <n>] [--host <h>]
      Prism mock of a tool's endpoints (POST /launch, /provision, /locations) for a contract.

<version> is a date from redocly.yaml, "current", or "dashboard" (mock and proxy only).
The port defaults to the version's own (below); --port or TIS_MOCK_PORT overrides it.`;

/**
 * Reads the launcher's arguments (everything after the mode) and the environment. Positionals: a version, and
 * in proxy mode an upstream URL (told apart by its scheme), in either order.
 */
export function planFrom(mode: MockMode, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Plan {
  let version: string | undefined;
  let upstreamArg: string | undefined;
  let portArg: string | undefined;
  let host = DEFAULT_HOST;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const [flag, inline] = arg.startsWith('--') ? (arg.split(/=(.*)/s, 2) as [string, string | undefined]) : [arg, undefined];
    const value = (): string => {
      const v = inline ?? args[++i];
      if (v === undefined || v === '') throw new UsageError(`${flag} needs a value`);
      return v;
    };
    if (flag === '--port' || flag === '-p') portArg = value();
    else if (flag === '--host' || flag === '-h') host = value();
    else if (flag === '--upstream' && mode === 'proxy') upstreamArg = value();
    else if (arg.startsWith('-')) throw new UsageError(`unknown option ${arg}\n\n${USAGE}`);
    else if (mode === 'proxy' && /^[a-z][a-z0-9+.-]*:\/\//i.test(arg)) {
      if (upstreamArg !== undefined) throw new UsageError(`more than one upstream URL: ${upstreamArg}, ${arg}`);
      upstreamArg = arg;
    } else {
      if (version !== undefined) throw new UsageError(`more than one version: ${version}, ${arg}\n\n${USAGE}`);
      version = arg;
    }
  }

  const requested = version === undefined || version === 'current' ? currentContractVersion : version;
  const candidates: readonly string[] = mode === 'tool' ? contractVersions : apiNames;
  if (!candidates.includes(requested)) {
    const what = mode === 'tool' ? 'contract version with a tool-side spec' : 'version';
    throw new UsageError(`unknown ${what} "${requested}"; served: ${servedApis(mode).join(', ')}`);
  }
  const api = requested as ApiName;

  const document = mode === 'tool' ? toolDocument(api) : apiDocument(api);
  if (!existsSync(document)) {
    throw new UsageError(`${path.relative(repoRoot, document)} does not exist; run \`npm run generate\` first`);
  }

  const portSource = portArg !== undefined ? '--port' : 'TIS_MOCK_PORT';
  const portValue = portArg ?? (env['TIS_MOCK_PORT'] === '' ? undefined : env['TIS_MOCK_PORT']);
  const port = portValue !== undefined ? parsePort(portValue, portSource) : mode === 'tool' ? toolDefaultPort(api) : defaultPort(api);

  // Quiet under load: Prism logs every request at `info`; `warn` keeps only violations and failures.
  const common = ['--host', host, '--port', String(port), '--verboseLevel', 'warn'];
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const label = mode === 'tool' ? `a tool of contract ${api}` : api === 'dashboard' ? 'the dashboard API' : `${roleOf(api)} ${api}`;

  if (mode === 'proxy') {
    const upstream =
      upstreamArg !== undefined
        ? parseUpstream(upstreamArg, 'the upstream argument')
        : env['TIS_UPSTREAM'] !== undefined && env['TIS_UPSTREAM'] !== ''
          ? parseUpstream(env['TIS_UPSTREAM'], 'TIS_UPSTREAM')
          : DEFAULT_UPSTREAM;
    return {
      mode,
      api,
      document,
      host,
      port,
      upstream,
      // --errors turns every request or response violation into an error answer instead of a header.
      prismArgs: ['proxy', document, upstream, '--errors', ...common],
      describe: `validates ${label} at ${origin}, forwarding to ${upstream}`,
    };
  }
  const specOrigin = mode === 'mock' ? documentOrigin(document) : undefined;
  return {
    mode,
    api,
    document,
    host,
    port,
    prismArgs: ['mock', document, ...common],
    describe: `mocks ${label} at ${origin}`,
    ...(specOrigin !== undefined ? { rewrite: { from: specOrigin, to: origin } } : {}),
  };
}

/** The origin of a bundle's first server, which its examples use for the URLs the service hands out. */
export function documentOrigin(document: string): string | undefined {
  const spec = JSON.parse(readFileSync(document, 'utf8')) as { servers?: { url?: string }[] };
  const url = spec.servers?.[0]?.url;
  if (url === undefined) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** The document text a mock serves: every occurrence of the spec's origin replaced by the mock's own. */
export function rewriteOrigins(text: string, rewrite: { from: string; to: string }): string {
  return text.split(rewrite.from).join(rewrite.to);
}
