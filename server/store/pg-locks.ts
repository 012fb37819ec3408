import type { Driver } from './driver.js';
import { TransactionMisuseError } from './errors.js';
import { PostgresDriver } from './postgres.js';

/** Advisory lock key space of named locks ("tit"); migrations use their own ("tis"). */
const NAMED_LOCK_CLASS = 0x746974;

/**
 * Holds a lock called `name` until the transaction `tx` ends, for a decision no row can guard, such as
 * "is there a signing key yet?" while there is no row to lock. SQLite needs none: `BEGIN IMMEDIATE`
 * already serializes every writer. On PostgreSQL it is a transaction-scoped advisory lock, one per name
 * and schema, waited for no longer than the driver's lock timeout (`StoreBusyError`).
 */
export async function lockName(tx: Driver, name: string): Promise<void> {
  if (tx.dialect !== 'postgres') return;
  if (tx instanceof PostgresDriver) {
    throw new TransactionMisuseError('lockName needs a transaction handle: outside one, the lock would end at once');
  }
  const { sql, params } = lockStatement(name);
  await tx.get(sql, params);
}

/** The statement `lockName` runs, for a transaction that sends it with others in one exchange (PERF-171). */
export function lockStatement(name: string): { sql: string; params: string[] } {
  return {
    sql: `SELECT pg_advisory_xact_lock(${NAMED_LOCK_CLASS}, hashtext(coalesce(current_schema(), '') || ':' || ?)) AS locked`,
    params: [name],
  };
}
