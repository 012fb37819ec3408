/**
 * The hidden cost of files (issue 16, decision OBJ-09): what one upload costs the service, through the
 * embedded store (the bytes stream through the service into `DATA_DIR/blobs`) and through an object store
 * (the tool posts straight to the bucket; the service signs the form and checks what arrived). For a 1 MB
 * and a 25 MB file, each upload is: the file PUT (sign), the POST of the form to its `url`, and a list of
 * the row (which settles the upload with an object store).
 *
 * The service runs as `npm start` runs it (`server/main.ts`, NODE_ENV=production) in a child process; the
 * bucket is s3rver on loopback in this process (scripts/bench/local-s3.ts), so its work is not counted.
 * Per upload the child's CPU (user + system, from /proc/<pid>/stat) and its peak resident memory during the
 * upload above its resident memory before it (VmHWM after resetting it through /proc/<pid>/clear_refs,
 * minus VmRSS) are read, so Linux is needed.
 *
 *   npm run bench -- --files [--uploads <n>]      (or node --import tsx scripts/bench/files.ts)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildServices } from '../../server/app.js';
import { configFrom } from '../../server/config.js';
import type { S3Settings } from '../../server/files/s3-settings.js';
import { createTool, launch, placeLocation } from '../../tests/server/harness.js';
import { LOCAL_S3_CREDENTIALS, startLocalS3 } from './local-s3.js';
import { freePort } from './scaffold.js';

const repoRoot = new URL('../..', import.meta.url).pathname;
const MB = 1_048_576;
const TICK_MS = 10; // USER_HZ is 100 on Linux.

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

function memoryKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0);
}

interface ServiceUnderTest {
  child: ChildProcess;
  url: string;
  auth: string;
  filesUrl: string;
  stop(): Promise<void>;
}

/** The fixture is written in-process, then the real service starts on the same store. */
async function startService(store: 'local' | 's3', s3: S3Settings | null): Promise<ServiceUnderTest> {
  const dataDir = mkdtempSync(join(tmpdir(), `tis-bench-files-${store}-`));
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const config = configFrom({ dataDir, publicUrl, blobStore: store, s3, logLevel: 'silent' });
  const services = await buildServices(config);
  const tool = await createTool({ services });
  const placed = await placeLocation({ services }, { app: tool.app.id });
  const student = await launch({ services }, { placed, groups: ['student'] });
  await services.blobs.close?.();
  await services.store.close();
  const env: Record<string, string> = {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: publicUrl,
    BLOB_STORE: store,
  };
  if (s3) {
    Object.assign(env, LOCAL_S3_CREDENTIALS, {
      S3_BUCKET: s3.bucket,
      S3_REGION: s3.region,
      S3_ENDPOINT: s3.endpoint ?? '',
      S3_FORCE_PATH_STYLE: '1',
      AWS_EC2_METADATA_DISABLED: 'true',
    });
  }
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service (${store}) exited early:\n${stderr}`);
    try {
      await fetch(`${publicUrl}/healthz`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`the service (${store}) did not start within 60 s:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    child,
    url: publicUrl,
    auth: `Bearer ${student!.apiToken}`,
    filesUrl: student!.claims.files.member,
    stop: async () => {
      if (child.exitCode === null && child.pid !== undefined) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        process.kill(child.pid, 'SIGTERM');
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface UploadCost {
  cpuMs: number;
  peakOverBaseMb: number;
  wallMs: number;
}

async function oneUpload(service: ServiceUnderTest, key: string, bytes: Buffer): Promise<UploadCost> {
  const pid = service.child.pid!;
  // Reset the peak, so VmHWM is the peak of this upload alone.
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const baseKb = memoryKb(pid, 'VmRSS');
  const cpuBefore = cpuMs(pid);
  const started = performance.now();
  const headers = { Authorization: service.auth, 'Content-Type': 'application/json' };
  const asked = await fetch(`${service.filesUrl}/${key}`, { method: 'PUT', headers, body: JSON.stringify({ size: bytes.length }) });
  if (asked.status !== 200) throw new Error(`file PUT answered ${asked.status}: ${await asked.text()}`);
  const form = (await asked.json()) as { url: string; fields: Record<string, string> };
  const body = new FormData();
  for (const [name, value] of Object.entries(form.fields)) body.append(name, value);
  body.append('file', new Blob([new Uint8Array(bytes)]), key);
  const posted = await fetch(form.url, { method: 'POST', body });
  if (posted.status !== 204) throw new Error(`upload answered ${posted.status}: ${await posted.text()}`);
  const listed = (await (await fetch(service.filesUrl, { headers: { Authorization: service.auth } })).json()) as Array<{ key: string; size: number }>;
  if (!listed.some((f) => f.key === key && f.size === bytes.length)) throw new Error(`${key} was not listed after its upload`);
  const wallMs = performance.now() - started;
  return { cpuMs: cpuMs(pid) - cpuBefore, peakOverBaseMb: (memoryKb(pid, 'VmHWM') - baseKb) / 1024, wallMs };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Runs the files section and answers it as Markdown. */
export async function runFilesBench(options: { uploads?: number } = {}): Promise<string> {
  if (process.platform !== 'linux') throw new Error('the files bench reads /proc: run it on Linux');
  const uploads = options.uploads ?? 3;
  const saved = { ...process.env };
  Object.assign(process.env, LOCAL_S3_CREDENTIALS, { AWS_EC2_METADATA_DISABLED: 'true' });
  const s3 = await startLocalS3();
  const rows: string[] = [];
  try {
    for (const store of ['local', 's3'] as const) {
      const service = await startService(store, store === 's3' ? s3.settings : null);
      try {
        // One warm-up upload: the first request of each kind compiles and caches what it needs.
        await oneUpload(service, 'warm-up.bin', Buffer.alloc(64 * 1024, 1));
        for (const size of [1 * MB, 25 * MB]) {
          const bytes = Buffer.alloc(size, 7);
          const costs: UploadCost[] = [];
          for (let i = 0; i < uploads; i += 1) {
            costs.push(await oneUpload(service, `f${size}-${i}.bin`, bytes));
            // Outside the measure: the row's 100 MB quota would refuse a fifth 25 MB file.
            await fetch(`${service.filesUrl}/f${size}-${i}.bin`, { method: 'DELETE', headers: { Authorization: service.auth } });
          }
          rows.push(
            `| ${store === 'local' ? 'embedded (local disk)' : 'object store (S3, s3rver)'} | ${size / MB} MB | ` +
              `${median(costs.map((c) => c.cpuMs)).toFixed(0)} | ${median(costs.map((c) => c.peakOverBaseMb)).toFixed(1)} | ` +
              `${median(costs.map((c) => c.wallMs)).toFixed(0)} |`,
          );
        }
      } finally {
        await service.stop();
      }
    }
  } finally {
    await s3.stop();
    for (const name of Object.keys(LOCAL_S3_CREDENTIALS)) if (saved[name] === undefined) delete process.env[name];
  }
  return [
    `### Files: one upload (sign, post the form, list), median of ${uploads}`,
    '',
    '| blob store | file | service CPU ms | service peak memory over its resident size before, MB | wall ms |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    `CPU in ${TICK_MS} ms ticks. With the object store the bytes go to the bucket (s3rver in the bench process, not counted): ` +
      'the service signs and lists, whatever the file size.',
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const at = process.argv.indexOf('--uploads');
  runFilesBench(at > 0 ? { uploads: Number(process.argv[at + 1]) } : {}).then(
    (table) => process.stdout.write(`${table}\n`),
    (err: unknown) => {
      process.stderr.write(`files bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
