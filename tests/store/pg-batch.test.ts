/**
 * PERF-170: several statements in one exchange with PostgreSQL, and the pipelined transaction the score path
 * runs on (BEGIN with its first statements, COMMIT with its last). The score's own use and its count of
 * round trips are shown in tests/server/scores/scores.test.ts; here what the score path relies on when a
 * statement fails.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { normalizeParams, toPostgresPlaceholders } from '../../server/store/driver.js';
import { statementConfig } from '../../server/store/pg-statements.js';
import { claimStatement } from '../../server/store/repos/score-idempotency.js';
import { ManualClock, POSTGRES_TARGET } from './helpers.js';

const STALE = { keptMs: 24 * 3600_000, unfinishedMs: 300_000 };

describe.runIf(POSTGRES_TARGET)('pipelined transactions on PostgreSQL', () => {
  it('answer each statement in order, commit together, and roll everything back when one fails', async () => {
    const { store, done } = await POSTGRES_TARGET!.fresh();
    const clock = new ManualClock(Date.now());
    const count = async (app: string) =>
      (await store.driver.get<{ n: number }>('SELECT count(*) AS n FROM score_idempotency WHERE app_id = ?', [app]))?.n;
    try {
      // Two statements and a write, then the commit: the write is there afterwards.
      const answers = await store.driver.pipelined!(async (tx) => {
        const results = await tx.open([
          { sql: 'SELECT CAST(? AS integer) + 1 AS n', params: [1] },
          { sql: 'SELECT CAST(? AS text) AS a, CAST(? AS integer) AS b', params: ['x', 2], arrays: true },
          claimStatement(clock, 'app_kept', 'k1', 'f', STALE),
          // The same named statement twice in one exchange is parsed once.
          { sql: 'SELECT CAST(? AS integer) + 1 AS n', params: [41] },
        ]);
        await tx.commit([]);
        return results.map((r) => [r.rows, r.rowCount]);
      });
      expect(answers).toEqual([
        [[{ n: 2 }], 1],
        [[['x', 2]], 1],
        [[{ claimed: 1 }], 1],
        [[{ n: 42 }], 1],
      ]);
      expect(await count('app_kept')).toBe(1);

      // A statement that fails in the COMMIT's exchange: COMMIT never runs, and the first exchange's write is undone.
      await expect(
        store.driver.pipelined!(async (tx) => {
          await tx.open([claimStatement(clock, 'app_undone', 'k1', 'f', STALE)]);
          await tx.commit([{ sql: 'SELECT CAST(? AS integer) AS n', params: ['not a number'] }]);
        }),
      ).rejects.toThrow(/invalid input syntax/);
      expect(await count('app_undone')).toBe(0);

      // A callback that throws between the exchanges rolls back too; the pool's connections stay usable.
      await expect(
        store.driver.pipelined!(async (tx) => {
          await tx.open([claimStatement(clock, 'app_thrown', 'k1', 'f', STALE)]);
          throw new Error('refused before publishing');
        }),
      ).rejects.toThrow('refused before publishing');
      expect(await count('app_thrown')).toBe(0);

      // A live key is not claimed again (no row), an expired one is taken over.
      const again = await store.driver.pipelined!(async (tx) => {
        const [claimed] = await tx.open([claimStatement(clock, 'app_kept', 'k1', 'g', STALE)]);
        await tx.commit([]);
        return claimed?.rowCount;
      });
      expect(again).toBe(0);
      clock.advance(STALE.keptMs + 1);
      const expired = await store.driver.pipelined!(async (tx) => {
        const [claimed] = await tx.open([claimStatement(clock, 'app_kept', 'k1', 'g', STALE)]);
        await tx.commit([]);
        return claimed?.rowCount;
      });
      expect(expired).toBe(1);
      expect(await store.driver.get('SELECT fingerprint FROM score_idempotency WHERE app_id = ?', ['app_kept'])).toEqual({ fingerprint: 'g' });

      // The store's form: what the repositories write in `commit` is sent with COMMIT, and a read there is refused.
      await store.pipelined!(async (tx) => {
        await tx.open([]);
        await tx.commit((repos) => repos.scoreIdempotency.complete('app_kept', 'k1', 'att_1'));
      });
      expect(await store.driver.get('SELECT attempt_id FROM score_idempotency WHERE app_id = ?', ['app_kept'])).toEqual({ attempt_id: 'att_1' });
      await expect(store.pipelined!(async (tx) => {
        await tx.open([]);
        await tx.commit((repos) => repos.attempts.get('att_1'));
      })).rejects.toThrow(/a read inside a pipelined commit/);
    } finally {
      await done();
    }
  });

  it('describes a named statement\'s columns once, and parse its later answers with what that gave (PERF-212)', async () => {
    const { store, done } = await POSTGRES_TARGET!.fresh();
    // A statement of its own text, so no other test has described it in this process.
    const read = { sql: 'SELECT CAST(? AS bigint) AS big, CAST(? AS text) AS t, NULL::integer AS nothing, 12.5::numeric AS n_perf_212', params: [9007199254740991, 'x'] };
    const name = statementConfig(toPostgresPlaceholders(read.sql), normalizeParams(read.params)).name;
    // The Describes of this statement: a Describe follows the Bind of the statement it describes. (Other
    // files' stores in this process may be sending statements of their own meanwhile.)
    const { prototype: connection } = createRequire(import.meta.url)('pg/lib/connection') as {
      prototype: { bind: (msg: { statement: string }) => unknown; describe: (...args: unknown[]) => unknown };
    };
    const { bind, describe } = connection;
    const bound = new WeakMap<object, string>();
    let described = 0;
    connection.bind = function (this: object, msg: { statement: string }) {
      bound.set(this, msg.statement);
      return bind.call(this, msg);
    };
    connection.describe = function (this: object, ...args: unknown[]) {
      if (bound.get(this) === name) described += 1;
      return describe.apply(this, args);
    };
    const run = () =>
      store.driver.pipelined!(async (tx) => {
        const [answer] = await tx.open([read, { ...read, arrays: true }]);
        const [again] = await tx.commit([read]);
        return [answer?.rows, again?.rows];
      });
    try {
      const row = { big: 9007199254740991, t: 'x', nothing: null, n_perf_212: 12.5 };
      expect(await run()).toEqual([[row], [row]]);
      const first = described;
      expect(await Promise.all([run(), run()])).toEqual([[[row], [row]], [[row], [row]]]);
      if (name !== undefined) {
        // Described in the first exchange, twice (nothing was known when it was sent), and never again, on
        // any connection.
        expect([first, described]).toEqual([2, 2]);
      }
      // Else this process had already named PERF-130's limit of statements (test files share a worker, CI-37),
      // so the text went unnamed and was described at every execution, as every unnamed one is: only the
      // answers above are checked then.
    } finally {
      connection.bind = bind;
      connection.describe = describe;
      await done();
    }
  });
});
