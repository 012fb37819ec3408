import type pg from 'pg';

/**
 * Above this many distinct statements the rest run unnamed: each name costs every pooled connection a
 * parsed statement and its cached plan in PostgreSQL's memory, and a caller building text per call (an
 * `IN` list of varying length) must not grow that without bound. The service has about 300 statements.
 */
export const NAMED_STATEMENT_LIMIT = 500;

/** `*` as a row's columns (`SELECT *`, `RETURNING *`, `t.*`), not `count(*)`. */
const WHOLE_ROW = /(?<!count\()\*/i;

/** A text's name, or null for a text that stays unnamed. */
const names = new Map<string, string | null>();
let named = 0;

/**
 * A statement with parameters as a named prepared statement (PERF-130): `pg` parses it once per pooled
 * connection and PostgreSQL then reuses its plan (a generic one once five custom plans cost no less)
 * instead of parsing and planning it on every execution. Planning was most of a score's database CPU: the
 * score path's joined read of ten tables took 0.5 to 1.5 ms to plan and 0.2 ms to run.
 *
 * Unnamed, as before: statements without parameters, so that a migration's or a transaction's control
 * text, which may hold several statements, keeps the simple protocol; and a text reading whole rows
 * (`SELECT *`), whose kept plan PostgreSQL refuses ("cached plan must not change result type") once
 * another instance's migration adds a column. A name is given per text, never reused for another: `pg`
 * refuses a known name with different text.
 */
export function statementConfig(text: string, values: unknown[]): pg.QueryConfig {
  if (values.length === 0) return { text, values };
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= NAMED_STATEMENT_LIMIT * 2) return { text, values };
    name = named < NAMED_STATEMENT_LIMIT && !WHOLE_ROW.test(text) ? `tis_${named++}` : null;
    names.set(text, name);
  }
  return name === null ? { text, values } : { name, text, values };
}
