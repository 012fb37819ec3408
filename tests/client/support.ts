// Real servers for the kit's tests: a recording HTTP server on 127.0.0.1, a signing service with a
// JWKS whose keys can rotate, and a Prism mock started from the generated bundle.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export type Handler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface RecordingServer {
  url: string;
  requests: RecordedRequest[];
  handle(handler: Handler): void;
  close(): Promise<void>;
}

/** An HTTP server that keeps every request (with its whole body) and answers with the current handler. */
export async function recordingServer(initial?: Handler): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  let handler: Handler = initial ?? ((_req, res) => void res.writeHead(404).end());
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(recorded);
      Promise.resolve(handler(recorded, res)).catch((error: unknown) => {
        res.writeHead(500).end(String(error));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    handle(next) {
      handler = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) }).end(text);
}

export function problem(status: number, code: string, detail: string, title = 'Unprocessable Content') {
  return { type: 'about:blank', title, status, detail, code, request_id: 'req_test' };
}

// ---------------------------------------------------------------------------------------------
// Signing

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function signingKey(kid = `key-${randomUUID()}`): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048 });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, publicJwk };
}

/** The service's side: a JWKS endpoint whose published keys can change, and a signer. */
export interface FakeService {
  origin: string;
  server: RecordingServer;
  /** How many times the JWKS was fetched. */
  jwksFetches(): number;
  publish(...keys: SigningKey[]): void;
  close(): Promise<void>;
}

export async function fakeService(...keys: SigningKey[]): Promise<FakeService> {
  let published = keys;
  const server = await recordingServer((req, res) => {
    if (req.path === '/.well-known/jwks.json') sendJson(res, 200, { keys: published.map((key) => key.publicJwk) });
    else res.writeHead(404).end();
  });
  return {
    origin: server.url,
    server,
    jwksFetches: () => server.requests.filter((r) => r.path === '/.well-known/jwks.json').length,
    publish(...next) {
      published = next;
    },
    close: () => server.close(),
  };
}

export interface SignOptions {
  alg?: string;
  kid?: string | null;
  typ?: string | null;
}

export async function sign(claims: JWTPayload, key: SigningKey, options: SignOptions = {}): Promise<string> {
  const header: Record<string, unknown> = { alg: options.alg ?? 'RS256' };
  if (options.kid !== null) header.kid = options.kid ?? key.kid;
  if (options.typ !== null) header.typ = options.typ ?? 'JWT';
  return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(key.privateKey);
}

// ---------------------------------------------------------------------------------------------
// Claims from the spec's own examples, re-aimed at a test service and tool

const requireJson = createRequire(import.meta.url);

type ClaimSchema = 'LaunchClaims' | 'ProvisionClaims' | 'LocationsClaims';

export function exampleClaims(
  schema: ClaimSchema,
  { issuer, appId, version = '2026-09-21', index = 0 }: { issuer: string; appId: string; version?: string; index?: number },
): Record<string, unknown> {
  const spec = requireJson(`../../generated/${version}/openapi.json`) as {
    components: { schemas: Record<string, { examples?: Record<string, unknown>[] }> };
  };
  const example = spec.components.schemas[schema]?.examples?.[index];
  if (!example) throw new Error(`no example ${index} of ${schema} in ${version}`);
  const now = Math.floor(Date.now() / 1000);
  return { ...structuredClone(example), iss: issuer, aud: appId, app: appId, iat: now, exp: now + 300, jti: randomUUID() };
}

// ---------------------------------------------------------------------------------------------
// Prism

export interface PrismMock {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Starts `prism mock` on a generated bundle and waits until it answers. */
export async function startPrism(api: string, extraArgs: string[] = []): Promise<PrismMock> {
  const port = await freePort();
  const cli = requireJson.resolve('@stoplight/prism-cli/dist/index.js');
  // Started as one node process (not through npx) so that its PID is the server's own.
  const child = spawn(
    process.execPath,
    [cli, 'mock', `generated/${api}/openapi.json`, '-p', String(port), '-h', '127.0.0.1', '-v', 'warn', ...extraArgs],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prism exited early:\n${output}`);
    try {
      await fetch(`${url}/.well-known/jwks.json`);
      return { url, process: child, stop };
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`prism did not start within 90 s:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
