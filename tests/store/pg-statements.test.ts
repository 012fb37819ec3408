/**
 * PERF-130: the service's parameterized statements run on PostgreSQL as named prepared statements, parsed
 * once per pooled connection, with a bound on how many texts get a name.
 */
import { describe, expect, it, vi } from 'vitest';
import { NAMED_STATEMENT_LIMIT, statementConfig } from '../../server/store/pg-statements.js';
import { POSTGRES_TARGET } from './helpers.js';

describe('statementConfig', () => {
  it('names a text with parameters once, the same name each time, and another text another name', () => {
    const first = statementConfig('SELECT $1::text AS a', ['x']);
    const again = statementConfig('SELECT $1::text AS a', ['y']);
    const other = statementConfig('SELECT $1::text AS b', ['x']);
    expect(first.name).toBeDefined();
    expect(again).toEqual({ name: first.name, text: 'SELECT $1::text AS a', values: ['y'] });
    expect(other.name).toBeDefined();
    expect(other.name).not.toBe(first.name);
  });

  it('leaves a text without parameters unnamed, so control text with several statements keeps the simple protocol', () => {
    expect(statementConfig('BEGIN; SET LOCAL lock_timeout = 5', [])).toEqual({ text: 'BEGIN; SET LOCAL lock_timeout = 5', values: [] });
  });

  it('leaves a text reading whole rows unnamed (a kept plan would fail once a migration adds a column), but not count(*)', () => {
    expect(statementConfig('SELECT * FROM apps WHERE id = $1', ['a']).name).toBeUndefined();
    expect(statementConfig('UPDATE apps SET name = $1 RETURNING *', ['a']).name).toBeUndefined();
    expect(statementConfig('SELECT count(*) AS n FROM apps WHERE id = $1', ['a']).name).toBeDefined();
  });

  it(`names no more than ${NAMED_STATEMENT_LIMIT} texts; the rest run unnamed`, async () => {
    // A module of its own, so filling its names leaves the driver's (used by the tests below) alone.
    vi.resetModules();
    const { statementConfig } = await import('../../server/store/pg-statements.js');
    statementConfig('SELECT $1::text AS a', ['x']);
    statementConfig('SELECT $1::text AS b', ['x']);
    const named = new Set<string>();
    for (let i = 0; i < NAMED_STATEMENT_LIMIT + 50; i += 1) {
      const { name } = statementConfig(`SELECT $1::int + ${i} AS n`, [i]);
      if (name !== undefined) named.add(name);
    }
    // Two texts were named above.
    expect(named.size).toBe(NAMED_STATEMENT_LIMIT - 2);
    expect(statementConfig(`SELECT $1::int + ${NAMED_STATEMENT_LIMIT + 1} AS n`, [1]).name).toBeUndefined();
    expect(statementConfig('SELECT $1::text AS a', ['still named']).name).toBeDefined();
  });
});

describe.runIf(POSTGRES_TARGET)('named statements on PostgreSQL', () => {
  it('are prepared once per connection and reused, inside a transaction and outside one', async () => {
    const { store, done } = await POSTGRES_TARGET!.fresh();
    try {
      const prepared = await store.driver.transaction(async (tx) => {
        for (let i = 0; i < 3; i += 1) {
          expect(await tx.get<{ n: number }>('SELECT CAST(? AS integer) + 1 AS n', [i])).toEqual({ n: i + 1 });
        }
        return tx.all<{ statement: string }>('SELECT statement FROM pg_prepared_statements WHERE statement LIKE ?', [
          'SELECT CAST($1 AS integer) + 1%',
        ]);
      });
      expect(prepared).toHaveLength(1);
      expect(await store.driver.get<{ n: number }>('SELECT CAST(? AS integer) + 1 AS n', [41])).toEqual({ n: 42 });
    } finally {
      await done();
    }
  });

  it('still report the statement error, and the transaction fails as PostgreSQL sees it', async () => {
    const { store, done } = await POSTGRES_TARGET!.fresh();
    try {
      await expect(store.driver.get('SELECT CAST(? AS integer) AS n', ['not a number'])).rejects.toThrow(/invalid input syntax/);
      expect(await store.driver.get<{ n: number }>('SELECT CAST(? AS integer) AS n', ['7'])).toEqual({ n: 7 });
    } finally {
      await done();
    }
  });
});
