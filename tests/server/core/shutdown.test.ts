/**
 * Graceful shutdown: a request in flight when the stop begins completes (and its write lands), new
 * connections are refused, and the store closes last. Once in-process, once as `npm start` would run.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import type { ClientRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildServices } from '../../../server/app.js';
import { configFrom } from '../../../server/config.js';
import { createTool, launch, placeLocation, startServer } from '../harness.js';

/** Starts a PUT whose body is sent in two halves, so the request is in flight between them. */
function slowPut(url: string, auth: string, body: string): { req: ClientRequest; finish: () => void; done: Promise<number> } {
  const target = new URL(url);
  let resolveDone!: (status: number) => void;
  let rejectDone!: (err: unknown) => void;
  const done = new Promise<number>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  const req = httpRequest(
    {
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: 'PUT',
      headers: { Authorization: auth, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    },
    (res) => {
      res.resume();
      res.on('end', () => resolveDone(res.statusCode ?? 0));
    },
  );
  req.on('error', rejectDone);
  const half = Math.floor(body.length / 2);
  req.write(body.slice(0, half));
  return { req, finish: () => req.end(body.slice(half)), done };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('graceful shutdown', () => {
  it('in process: finishes the request in flight, then closes', async () => {
    const server = await startServer();
    const tool = await createTool(server);
    const placed = await placeLocation(server, { app: tool.app.id });
    const student = await launch(server, { placed });
    const slow = slowPut(student.claims.storage.member, student.auth, JSON.stringify({ answer: 42, pad: 'x'.repeat(1000) }));
    await sleep(100);
    const stopping = server.stop();
    await sleep(100);
    // New connections are refused while the request in flight is still running.
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    slow.finish();
    expect(await slow.done).toBe(204);
    await stopping;
  });

  it('npm start: SIGTERM lets the request in flight land, then exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tis-shutdown-'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
      cwd: process.cwd(),
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', NODE_ENV: 'test' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start: ${stderr}`)), 30_000);
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        const m = /listening on (http:\/\/\S+)/.exec(stdout);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      // A second process on the same data directory records a launch (the store is shared, WAL).
      const services = await buildServices(configFrom({ dataDir, logLevel: 'silent' }));
      const tool = await createTool({ services });
      const placed = await placeLocation({ services }, { app: tool.app.id });
      const student = await launch({ services }, { placed });
      const memberRow = new URL(student.claims.storage.member).pathname;
      const slow = slowPut(`${url}${memberRow}`, student.auth, '{"landed":true}');
      await sleep(200);
      child.kill('SIGTERM');
      await sleep(200);
      slow.finish();
      expect(await slow.done).toBe(204);
      expect(await exited).toBe(0);
      const row = await services.store.rows.getRow({ appId: tool.app.id, contextId: placed.context.id, kind: 'member', memberId: student.member.id });
      expect(JSON.parse(row)).toEqual({ landed: true });
      await services.store.close();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
