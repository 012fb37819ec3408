/**
 * Backups and restore (issue 26, decisions OPS-20 to OPS-23).
 *
 * SQLite: the real service (startService, on 127.0.0.1) runs on a temp `DATA_DIR`; rows, files and scores are
 * written through its HTTP API; the backup runs while writers keep patching rows, replacing files and posting
 * scores, and at the moment after its first snapshot a file is replaced (so the blob that snapshot names is
 * unlinked before it is copied: the backup must take a newer snapshot). The archive is restored with
 * `tis store restore` into an empty directory, a service is started on the copy, and everything written
 * before the backup reads back identical: rows, file listings, content types and bytes, attempts, signing
 * keys and the platform token; what the writers wrote meanwhile reads back as one of the versions written.
 * The refusals of a restore (a non-empty directory, a damaged or cut archive) leave nothing behind.
 *
 * PostgreSQL: the README's procedure, pg_dump of a database a service is writing to, pg_restore into a new
 * database, and a service on it serving the rows, the files (`BLOB_STORE=postgres`) and the attempts.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { Io } from '../../bin/tis.ts';
import { run } from '../../bin/tis.ts';
import { backupDataDir } from '../../server/backup/backup.ts';
import { TarReader, TarWriter } from '../../server/backup/tar.ts';
import { createTool, launch, placeLocation, startServer, type TestLaunch, type TestServer } from '../server/harness.ts';
import { POSTGRES_REQUIRED, POSTGRES_URL, postgresStatus } from '../store/helpers.ts';

const PUBLIC_URL = 'https://tis.backup.test';
const scratch = mkdtempSync(join(tmpdir(), 'tis-backup-'));
const servers: TestServer[] = [];
afterAll(async () => {
  for (const server of servers) await server.stop();
  rmSync(scratch, { recursive: true, force: true });
});

async function tis(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l) };
  const code = await run(args, env, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** One service's HTTP API, with the claims' `PUBLIC_URL` URLs rewritten onto its real origin. */
function apiOf(base: string) {
  const on = (url: string): string => `${base}${new URL(url).pathname}`;
  const call = async (auth: string, method: string, url: string, body?: unknown): Promise<Response> =>
    fetch(on(url), {
      method,
      headers: { Authorization: auth, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  return {
    call,
    async json<T>(auth: string, url: string): Promise<T> {
      const response = await call(auth, 'GET', url);
      expect(response.status, await response.clone().text()).toBe(200);
      return (await response.json()) as T;
    },
    /** Asks for a form and posts the bytes to it; resolves once the service answered the upload. */
    async store(auth: string, fileUrl: string, bytes: Uint8Array, options: { mimetype?: string; filename?: string; attachment?: boolean } = {}): Promise<void> {
      const asked = await call(auth, 'PUT', fileUrl, { size: bytes.length, ...options });
      expect(asked.status, await asked.clone().text()).toBe(200);
      const form = (await asked.json()) as { url: string; fields: Record<string, string> };
      const body = new FormData();
      for (const [name, value] of Object.entries(form.fields)) body.append(name, value);
      body.append('file', new Blob([Buffer.from(bytes)]), 'upload.bin');
      const posted = await fetch(on(form.url), { method: 'POST', body });
      expect(posted.status, await posted.clone().text()).toBe(204);
    },
    /** A file's detail and its bytes' SHA-256, read through its signed download URL. */
    async file(auth: string, fileUrl: string): Promise<{ key: string; size: number; modified: number; content_type: string; sha256: string }> {
      const detail = await this.json<{ key: string; size: number; modified: number; content_type: string; url: string }>(auth, fileUrl);
      const download = await fetch(on(detail.url));
      expect(download.status).toBe(200);
      // `expires` is the URL's: now plus five minutes, whenever it is asked.
      const { url: _url, expires: _expires, ...rest } = detail as typeof detail & { expires: number };
      return { ...rest, sha256: sha(new Uint8Array(await download.arrayBuffer())) };
    },
  };
}

describe('tis store backup and restore (SQLite)', () => {
  it('round-trips rows, files and scores taken under write load, and a service on the copy reads them back identical', async () => {
    const dataDir = join(scratch, 'live');
    const live = await startServer({ dataDir, config: { publicUrl: PUBLIC_URL, logLevel: 'warn' } });
    servers.push(live);
    const tool = await createTool(live);
    const quiz = await placeLocation(live, { app: tool.app.id, type: 'assessment', points: 10 });
    const instructor = await launch(live, { placed: quiz, groups: ['instructor'] });
    const students: TestLaunch[] = [];
    for (let i = 0; i < 2; i += 1) students.push(await launch(live, { placed: quiz, groups: ['student'] }));
    const api = apiOf(live.url);
    const files = instructor.claims.files;

    // Written before the backup: must come back exactly.
    const contextRow = { title: 'Week 1', weights: [0.2, 0.3, 0.5], nested: { a: { b: 'ü ✓' } } };
    expect((await api.call(instructor.auth, 'PUT', instructor.claims.storage.context, contextRow)).status).toBe(204);
    const memberRows = new Map<TestLaunch, unknown>();
    for (const [i, student] of students.entries()) {
      const row = { answers: Array.from({ length: 30 }, (_, n) => `student ${i} answer ${n}`) };
      expect((await api.call(student.auth, 'PUT', student.claims.storage.member, row)).status).toBe(204);
      memberRows.set(student, row);
    }
    await api.store(instructor.auth, `${files.context}/syllabus.pdf`, randomBytes(100_000), { filename: 'Syllabus 2027.pdf', attachment: true });
    await api.store(instructor.auth, `${files.context}/notes.txt`, Buffer.from('read chapter 3\n'));
    await api.store(instructor.auth, `${files.context}/diagram.bin`, randomBytes(20_000), { mimetype: 'image/svg+xml' });
    for (const student of students) await api.store(student.auth, `${student.claims.files.member}/essay.docx`, randomBytes(40_000));
    const attempts: Array<{ id: string; score: number; member: string }> = [];
    for (const [i, student] of students.entries()) {
      for (const score of [0.25 + i / 10]) {
        const response = await api.call(student.auth, 'POST', student.claims.grade.submit ?? '', { score, comment: `attempt ${score}` });
        expect(response.status, await response.clone().text()).toBe(200);
        attempts.push({ id: ((await response.json()) as { id: string }).id, score, member: student.member.id });
      }
    }
    const before = {
      context: await api.json<Array<{ key: string }>>(instructor.auth, files.context),
      details: new Map<string, unknown>(),
    };
    for (const f of before.context) before.details.set(`context/${f.key}`, await api.file(instructor.auth, `${files.context}/${f.key}`));
    for (const [i, student] of students.entries()) before.details.set(`member ${i}`, await api.file(student.auth, `${student.claims.files.member}/essay.docx`));
    const jwks = await (await fetch(`${live.url}/.well-known/jwks.json`)).json();

    // Writers that keep going while the backup runs: patches, file replacements, scores.
    const churned = new Map<string, Set<string>>();
    const churn = async (key: string): Promise<void> => {
      const bytes = randomBytes(10_000 + Math.floor(Math.random() * 10_000));
      const versions = churned.get(key) ?? new Set<string>();
      churned.set(key, versions);
      versions.add(sha(bytes));
      await api.store(instructor.auth, `${files.location}/${key}`, bytes);
    };
    for (const key of ['churn-0', 'churn-1', 'churn-2']) await churn(key);
    let stop = false;
    const counts = { patches: 0, replaced: 0, scores: 0 };
    const loadAttempts: Array<{ id: string; score: number }> = [];
    const workers = [
      (async () => {
        for (let n = 0; !stop; n += 1) {
          const response = await api.call(instructor.auth, 'PATCH', instructor.claims.storage.location, { patch: [{ op: 'add', path: `/k${n}`, value: n }] });
          expect(response.status).toBe(204);
          counts.patches += 1;
        }
      })(),
      (async () => {
        for (let n = 0; !stop; n += 1) {
          await churn(`churn-${n % 3}`);
          counts.replaced += 1;
        }
      })(),
      (async () => {
        for (let n = 0; !stop; n += 1) {
          const score = (n % 10) / 10;
          const response = await api.call(students[0]!.auth, 'POST', students[0]!.claims.grade.submit ?? '', { score });
          expect(response.status).toBe(200);
          loadAttempts.push({ id: ((await response.json()) as { id: string }).id, score });
          counts.scores += 1;
        }
      })(),
    ];
    while (counts.patches < 3 || counts.replaced < 3 || counts.scores < 3) await new Promise((r) => setTimeout(r, 20));

    const atStart = counts.patches + counts.replaced + counts.scores;
    const archive = join(scratch, 'live.tar');
    const manifest = await backupDataDir({
      dataDir,
      out: archive,
      serviceVersion: 'test',
      // The blob the first snapshot names for churn-0 is unlinked by the service before it can be copied.
      afterSnapshot: async (n) => {
        if (n === 1) await churn('churn-0');
      },
    });
    // The writers were served while the backup ran.
    expect(counts.patches + counts.replaced + counts.scores).toBeGreaterThan(atStart);
    stop = true;
    await Promise.all(workers);
    expect(manifest.counts.snapshots).toBeGreaterThanOrEqual(2);
    expect(manifest.counts).toMatchObject({ files: 8, blobs: 8, missing: 0, in_bucket: 0 });

    // The CLI: its own backup of the same directory, the refusals of an existing file and of PostgreSQL.
    const byCli = await tis(['store', 'backup', '--out', join(scratch, 'cli.tar')], { DATA_DIR: dataDir });
    expect(byCli, byCli.err).toMatchObject({ code: 0, out: expect.stringContaining('8 file records, 8 blobs') });
    expect(await tis(['store', 'backup', '--out', join(scratch, 'cli.tar')], { DATA_DIR: dataDir })).toMatchObject({ code: 1, err: expect.stringContaining('exists already') });
    expect(await tis(['store', 'backup', '--out', join(scratch, 'pg.tar')], { DATA_DIR: dataDir, DATABASE_URL: 'postgres://tis@127.0.0.1/tis' })).toMatchObject({
      code: 2,
      err: expect.stringContaining('pg_dump'),
    });
    expect(await tis(['store', 'backup'], { DATA_DIR: dataDir })).toMatchObject({ code: 2, err: expect.stringContaining('store backup needs --out') });
    // GNU tar reads the archive (OPS-20).
    expect(execFileSync('tar', ['-tf', archive]).toString().trim().split('\n').at(-1)).toBe('manifest.json');

    const copy = join(scratch, 'copy');
    const restored = await tis(['store', 'restore', archive, '--data-dir', copy]);
    expect(restored, restored.err).toMatchObject({ code: 0, out: expect.stringContaining('8 file records, 8 blobs') });
    expect(readdirSync(copy).sort()).toEqual(['blobs', 'platform-token', 'tis.sqlite']);
    expect(readFileSync(join(copy, 'platform-token'), 'utf8')).toBe(readFileSync(join(dataDir, 'platform-token'), 'utf8'));
    // A second restore into it is refused, and changes nothing.
    expect(await tis(['store', 'restore', archive, '--data-dir', copy])).toMatchObject({ code: 1, err: expect.stringContaining('is not empty') });
    expect(readdirSync(copy).sort()).toEqual(['blobs', 'platform-token', 'tis.sqlite']);

    await live.stop();
    const server = await startServer({ dataDir: copy, config: { publicUrl: PUBLIC_URL, logLevel: 'warn' } });
    servers.push(server);
    const copyApi = apiOf(server.url);
    // The same launches' tokens, signing keys and platform token work on the copy.
    expect(await (await fetch(`${server.url}/.well-known/jwks.json`)).json()).toEqual(jwks);
    const platformToken = readFileSync(join(dataDir, 'platform-token'), 'utf8').trim();
    expect((await fetch(`${server.url}/dashboard/v1/me`, { headers: { Authorization: `Bearer ${platformToken}` } })).status).toBe(200);
    expect(await copyApi.json(instructor.auth, instructor.claims.storage.context)).toEqual(contextRow);
    for (const [student, row] of memberRows) expect(await copyApi.json(student.auth, student.claims.storage.member)).toEqual(row);
    expect(await copyApi.json(instructor.auth, files.context)).toEqual(before.context);
    for (const f of before.context) expect(await copyApi.file(instructor.auth, `${files.context}/${f.key}`)).toEqual(before.details.get(`context/${f.key}`));
    for (const [i, student] of students.entries()) {
      expect(await copyApi.file(student.auth, `${student.claims.files.member}/essay.docx`)).toEqual(before.details.get(`member ${i}`));
    }
    // What the writers wrote meanwhile: each churned file is one of the versions written, whole.
    const churnedNow = await copyApi.json<Array<{ key: string }>>(instructor.auth, files.location);
    expect(churnedNow.map((f) => f.key)).toEqual(['churn-0', 'churn-1', 'churn-2']);
    for (const { key } of churnedNow) expect(churned.get(key)).toContain((await copyApi.file(instructor.auth, `${files.location}/${key}`)).sha256);
    const patched = await copyApi.json<Record<string, number>>(instructor.auth, instructor.claims.storage.location);
    // Patches land in order: the copy holds a prefix of them, with no gap.
    const keys = Object.keys(patched).length;
    for (let n = 0; n < keys; n += 1) expect(patched[`k${n}`]).toBe(n);
    for (const attempt of attempts) expect(await server.services.store.attempts.get(attempt.id)).toMatchObject({ score: attempt.score, memberId: attempt.member });
    for (const attempt of loadAttempts) {
      const record = await server.services.store.attempts.get(attempt.id);
      if (record) expect(record.score).toBe(attempt.score);
    }
    // The copy is a working data directory.
    expect((await copyApi.call(students[1]!.auth, 'PUT', students[1]!.claims.storage.member, { after: 'restore' })).status).toBe(204);
  }, 180_000);

  it('refuses a damaged or cut archive before writing anything', async () => {
    const archive = join(scratch, 'live.tar');
    const reader = await TarReader.open(archive);
    let blob: { offset: number } | undefined;
    for await (const member of reader.members()) if (member.name.startsWith('blobs/') && member.size > 0) blob ??= member;
    await reader.close();
    const bytes = readFileSync(archive);
    const damaged = Buffer.from(bytes);
    damaged[blob!.offset + 10] = damaged[blob!.offset + 10]! ^ 0xff;
    writeFileSync(join(scratch, 'damaged.tar'), damaged);
    writeFileSync(join(scratch, 'cut.tar'), bytes.subarray(0, Math.floor(bytes.length / 2)));
    for (const [name, message] of [
      ['damaged.tar', 'is damaged: its size or SHA-256 is not the one the manifest records'],
      ['cut.tar', 'the archive is cut short'],
    ] as const) {
      const target = join(scratch, `restore-${name}`);
      expect(await tis(['store', 'restore', join(scratch, name), '--data-dir', target])).toMatchObject({ code: 1, err: expect.stringContaining(message) });
      expect(existsSync(target)).toBe(false);
    }
  });
});

describe('the archive container (OPS-20)', () => {
  it('writes a member\'s size as a pax record when ustar cannot hold it, and GNU tar and the reader agree on it', async () => {
    const path = join(scratch, 'pax.tar');
    const writer = await TarWriter.create(path, { paxSizeFrom: 1000 });
    const big = randomBytes(5000);
    await writer.add('blobs/ab/big', big.length, [big]);
    await writer.add('small', 3, [Buffer.from('abc')]);
    await writer.finish();
    expect(execFileSync('tar', ['-tvf', path]).toString()).toMatch(/ 5000 .* blobs\/ab\/big\n.* 3 .* small\n$/);
    const reader = await TarReader.open(path);
    const members = [];
    for await (const member of reader.members()) {
      const chunks: Buffer[] = [];
      for await (const chunk of reader.bytes(member)) chunks.push(chunk);
      members.push({ name: member.name, bytes: Buffer.concat(chunks).toString('hex') });
    }
    await reader.close();
    expect(members).toEqual([
      { name: 'blobs/ab/big', bytes: big.toString('hex') },
      { name: 'small', bytes: Buffer.from('abc').toString('hex') },
    ]);
  });
});

const pgBin = (tool: string): string => (existsSync(`/usr/lib/postgresql/15/bin/${tool}`) ? `/usr/lib/postgresql/15/bin/${tool}` : tool);

describe.skipIf(!postgresStatus.available && !POSTGRES_REQUIRED)('PostgreSQL: pg_dump and pg_restore (the README procedure)', () => {
  it('restores a dump taken while the service writes into a fresh database, and a service on it serves rows, files and attempts', async () => {
    const name = `tis_backup_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    const urlOf = (database: string): string => {
      const url = new URL(POSTGRES_URL);
      url.pathname = `/${database}`;
      return url.toString();
    };
    try {
      for (const database of [`${name}_live`, `${name}_copy`]) {
        await admin.query(`CREATE DATABASE ${database} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`);
      }
      const config = { publicUrl: PUBLIC_URL, logLevel: 'warn' as const, blobStore: 'postgres' as const, databaseSchema: null };
      const liveServer = await startServer({ config: { ...config, databaseUrl: urlOf(`${name}_live`) } });
      servers.push(liveServer);
      const tool = await createTool(liveServer);
      const quiz = await placeLocation(liveServer, { app: tool.app.id, type: 'assessment', points: 10 });
      const student = await launch(liveServer, { placed: quiz, groups: ['student'] });
      const api = apiOf(liveServer.url);
      const row = { answers: ['a', 'b'], note: 'before the dump' };
      expect((await api.call(student.auth, 'PUT', student.claims.storage.member, row)).status).toBe(204);
      await api.store(student.auth, `${student.claims.files.member}/essay.txt`, randomBytes(100_000), { mimetype: 'text/plain' });
      const file = await api.file(student.auth, `${student.claims.files.member}/essay.txt`);
      const scored = await api.call(student.auth, 'POST', student.claims.grade.submit ?? '', { score: 0.8 });
      expect(scored.status).toBe(200);
      const attemptId = ((await scored.json()) as { id: string }).id;

      // The dump runs while the service keeps writing: pg_dump reads one snapshot.
      let stop = false;
      const writer = (async () => {
        for (let n = 0; !stop; n += 1) {
          expect((await api.call(student.auth, 'PATCH', student.claims.storage.member_location, { patch: [{ op: 'add', path: `/k${n}`, value: n }] })).status).toBe(204);
        }
      })();
      const dump = join(scratch, `${name}.dump`);
      execFileSync(pgBin('pg_dump'), ['--format=custom', `--file=${dump}`, `--dbname=${urlOf(`${name}_live`)}`]);
      stop = true;
      await writer;
      execFileSync(pgBin('pg_restore'), ['--no-owner', '--exit-on-error', '--single-transaction', `--dbname=${urlOf(`${name}_copy`)}`, dump]);
      await liveServer.stop();

      const copyServer = await startServer({ config: { ...config, databaseUrl: urlOf(`${name}_copy`) } });
      servers.push(copyServer);
      const copyApi = apiOf(copyServer.url);
      expect(await copyApi.json(student.auth, student.claims.storage.member)).toEqual(row);
      expect(await copyApi.file(student.auth, `${student.claims.files.member}/essay.txt`)).toEqual(file);
      expect(await copyServer.services.store.attempts.get(attemptId)).toMatchObject({ score: 0.8, memberId: student.member.id });
      const patched = await copyApi.json<Record<string, number>>(student.auth, student.claims.storage.member_location);
      for (let n = 0; n < Object.keys(patched).length; n += 1) expect(patched[`k${n}`]).toBe(n);
      await copyServer.stop();
    } finally {
      for (const database of [`${name}_live`, `${name}_copy`]) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    }
  }, 120_000);
});
