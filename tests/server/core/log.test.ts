/**
 * The structured logs (issue 17 §3, decision OPS-04): pino JSON lines with `time`, `level` by name and `msg`;
 * a child carries its fields (the request id) into every line; credentials are redacted wherever a field of a
 * secret's name appears; errors keep their message and stack; and over real HTTP, every line of a request
 * carries the `Request-Id` the response names, with no bearer token anywhere in the log.
 */
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, REDACTED, REDACTED_FIELDS } from '../../../server/http/log.ts';
import type { TestServer } from '../harness.ts';
import { startServer } from '../harness.ts';

describe('logger', () => {
  it('writes pino JSON lines with ISO time, level names, child fields and secrets redacted', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'info', sink: (line) => lines.push(line) });
    log.debug('not written');
    log.child({ request_id: 'req_1' }).info('called', {
      headers: { authorization: 'Bearer tisb_secret', accept: 'application/json' },
      token: 'tisb_other',
      api_key: 'ltiaas_app_x_y',
      launch_data: 'eyJ.x.y',
      app: 'app_1',
    });
    log.error('failed', { err: new Error('boom', { cause: new Error('root') }) });
    expect(lines).toHaveLength(2);
    const [called, failed] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(called).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      msg: 'called',
      request_id: 'req_1',
      headers: { authorization: REDACTED, accept: 'application/json' },
      token: REDACTED,
      api_key: REDACTED,
      launch_data: REDACTED,
      app: 'app_1',
    });
    expect(lines.join('\n')).not.toMatch(/tisb_secret|tisb_other|ltiaas_app_x_y|eyJ\.x\.y/);
    expect(failed?.['level']).toBe('error');
    expect(failed?.['err']).toMatchObject({ name: 'Error', message: 'boom', stack: expect.stringContaining('boom'), cause: { message: 'root' } });
  });

  it('writes nothing at level silent', () => {
    const lines: string[] = [];
    createLogger({ level: 'silent', sink: (line) => lines.push(line) }).error('x');
    expect(lines).toEqual([]);
  });
});

describe('lines written without pino (PERF-123)', () => {
  /** What pino itself writes for the merged fields, with createLogger's options (time left out below). */
  const byPino = (level: 'info' | 'warn', bindings: Record<string, unknown>, fields: Record<string, unknown>, msg: string): string => {
    const lines: string[] = [];
    const reference = pino(
      {
        level: 'debug',
        base: null,
        timestamp: () => ',"time":"T"',
        formatters: { level: (label) => ({ level: label }) },
        serializers: { err: (value: unknown) => value },
      },
      { write: (line: string) => lines.push(line.slice(0, -1)) },
    );
    reference[level]({ ...bindings, ...fields }, msg);
    return lines[0] ?? '';
  };
  const withoutTime = (line: string): string => line.replace(/,"time":"[^"]*"/, ',"time":"T"');
  const secrets: ReadonlySet<string> = new Set(REDACTED_FIELDS);
  const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\u0001', '\ud800', 'a', '%') }), fc.string({ minLength: 95, maxLength: 110 }));
  const value = fc.oneof(text, fc.double(), fc.integer(), fc.boolean(), fc.constant(undefined), fc.constant(null), fc.constant({ a: 1 }));
  const key = fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom('level', 'time', 'msg', 'err', '0', '12', 'method', 'status'));
  const fields = fc.dictionary(key, value, { maxKeys: 6 })
    // Secrets take the redacting logger, and a name `in` every object (`valueOf`) a pino child: not these lines.
    .map((f) => Object.fromEntries(Object.entries(f).filter(([k]) => !secrets.has(k) && !(k in {}))));

  it('are byte for byte the lines pino writes for the same fields', () => {
    fc.assert(
      fc.property(fields, fields, text, fc.constantFrom('info' as const, 'warn' as const), (bindings, own, msg, level) => {
        for (const k of Object.keys(own)) if (k in bindings) delete own[k];
        const lines: string[] = [];
        createLogger({ level: 'info', sink: (line) => lines.push(line) })
          .child(bindings)
          [level](msg, own);
        expect(lines).toHaveLength(1);
        expect(withoutTime(lines[0] ?? '')).toBe(byPino(level, bindings, own, msg));
      }),
      { numRuns: 2000 },
    );
  });

  it('the access line among them', () => {
    const lines: string[] = [];
    createLogger({ level: 'info', sink: (line) => lines.push(line) })
      .child({ request_id: 'req_abc' })
      .info('request', { method: 'GET', path: '/v1/x/{id}', operation: undefined, status: 200, duration_ms: 1.234 });
    expect(withoutTime(lines[0] ?? '')).toBe(
      '{"level":"info","time":"T","request_id":"req_abc","method":"GET","path":"/v1/x/{id}","status":200,"duration_ms":1.234,"msg":"request"}',
    );
  });
});

describe('request logs', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ config: { logLevel: 'debug' } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('tag every line of a request with its Request-Id and never carry the bearer token', async () => {
    const token = 'tisb_' + 'Z'.repeat(43);
    const response = await fetch(`${server.url}/dashboard/v1/me`, { headers: { Authorization: `Bearer ${token}` } });
    expect(response.status).toBe(401);
    const id = response.headers.get('request-id');
    expect(id).toMatch(/^req_/);
    const lines = server.logs.filter((l) => l['request_id'] === id);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.find((l) => l['msg'] === 'request')).toMatchObject({ level: 'info', status: 401 });
    expect(JSON.stringify(server.logs)).not.toContain(token);
  });
});
