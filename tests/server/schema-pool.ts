/**
 * Migrated PostgreSQL schemas kept for the next test server (decision CI-04). Creating a schema and running
 * every migration in it takes about a second, and dropping it a few hundred milliseconds more: paid by each
 * of the hundreds of servers the `postgres` vitest project starts. Instead, a schema a server no longer uses
 * is emptied back to the state of a freshly migrated one and renamed `tsrv_<run>_free_<id>`; the next server
 * on a harness-made `DATA_DIR`, in any worker of the same run, takes it by renaming it to its own name.
 *
 * "Back to a freshly migrated schema" is checked, not assumed: the global setup migrates a template schema
 * once per run (tests/server/postgres-setup.ts), and a schema goes to the pool only when its shape (tables,
 * columns, indexes, constraints, functions, triggers) and its applied migrations are the template's; its rows
 * are then deleted and the template's rows (what migrations insert) copied in. Anything else (a test that
 * altered a table, another component's tables) is dropped as before. Schemas a test names or shares itself
 * (`serviceStoreEnv`, `openTestStore`, a `dataDir` of its own) never come from the pool, so a test of a first
 * start on an empty schema still gets an empty schema.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

/**
 * Two pools, each with a template of its own (decision CI-56): `store`, the service's store freshly migrated
 * (the store tests, tests/store/helpers.ts), and `server`, what a first start that reached the Sandbox LMS
 * leaves (the service's and the LMS's tables, and a signing key of each), which test servers without a clock
 * of their own start from (tests/server/harness.ts), as on SQLite (CI-55).
 */
export type PoolKind = 'store' | 'server';

/** Set by the global setup when the templates exist; without them (outside vitest) every schema is new. */
export const TEMPLATE_ENV: Record<PoolKind, string> = { store: 'TIS_TEST_SCHEMA_TEMPLATE', server: 'TIS_TEST_SERVER_SCHEMA_TEMPLATE' };

const MIGRATIONS_TABLE = 'schema_migrations';

/**
 * The run pooled schemas belong to: the vitest run's (its global setup names it), or this process's outside
 * vitest. Test servers (tests/server/harness.ts) and the store tests (tests/store/helpers.ts) share one pool.
 */
export function poolRun(): string {
  return (process.env['TIS_TEST_RUN'] ?? `p${process.pid}`).toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 16);
}

/** Everything that makes two schemas the same for the service, as one digest. */
const SHAPE = `
SELECT md5(coalesce(string_agg(item, ',' ORDER BY item), '')) AS shape FROM (
  SELECT 'rel:' || c.relname || ':' || c.relkind::text AS item FROM pg_class c WHERE c.relnamespace = $1::text::regnamespace
  UNION ALL
  SELECT 'col:' || c.relname || ':' || a.attnum || ':' || a.attname || ':' || format_type(a.atttypid, a.atttypmod)
         || ':' || a.attnotnull || ':' || replace(coalesce(pg_get_expr(d.adbin, d.adrelid), ''), quote_ident($1::text) || '.', '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE c.relnamespace = $1::text::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'con:' || conname || ':' || replace(pg_get_constraintdef(oid), quote_ident($1::text) || '.', '')
    FROM pg_constraint WHERE connamespace = $1::text::regnamespace
  UNION ALL
  SELECT 'idx:' || ic.relname || ':' || c.relname || ':' || i.indkey::text || ':' || i.indisunique
         || ':' || coalesce(pg_get_expr(i.indpred, i.indrelid), '')
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
    WHERE c.relnamespace = $1::text::regnamespace
  UNION ALL
  SELECT 'fn:' || p.proname || ':' || md5(p.prosrc) FROM pg_proc p WHERE p.pronamespace = $1::text::regnamespace
  UNION ALL
  SELECT 'trg:' || c.relname || ':' || t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE c.relnamespace = $1::text::regnamespace AND NOT t.tgisinternal
) items`;

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

interface Template {
  name: string;
  shape: string;
  migrations: string;
  tables: string[];
  /** Tables the migrations put rows in (copied into an emptied schema). */
  seeded: string[];
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function shapeOf(client: pg.Client, schema: string): Promise<string> {
  const { rows } = await client.query<{ shape: string }>(SHAPE, [schema]);
  return rows[0]?.shape ?? '';
}

async function migrationsOf(client: pg.Client, schema: string): Promise<string> {
  const { rows } = await client.query<{ applied: string | null }>(
    `SELECT string_agg(id || ':' || checksum, ',' ORDER BY id) AS applied FROM ${quote(schema)}.${MIGRATIONS_TABLE}`,
  );
  return rows[0]?.applied ?? '';
}

const templates = new Map<PoolKind, Promise<Template | null>>();

/** The run's template of a pool, read once per process; null when there is none (no pooling). */
function templateOf(url: string, kind: PoolKind): Promise<Template | null> {
  let template = templates.get(kind);
  if (template) return template;
  template = (async () => {
    const name = process.env[TEMPLATE_ENV[kind]]?.trim();
    if (!name) return null;
    return withClient(url, async (client) => {
      const { rows } = await client.query<{ name: string }>(
        "SELECT relname AS name FROM pg_class WHERE relnamespace = $1::text::regnamespace AND relkind = 'r' ORDER BY relname",
        [name],
      );
      const tables = rows.map((r) => r.name).filter((t) => t !== MIGRATIONS_TABLE);
      const seeded: string[] = [];
      for (const table of tables) {
        const found = await client.query(`SELECT 1 FROM ${quote(name)}.${quote(table)} LIMIT 1`);
        if ((found.rowCount ?? 0) > 0) seeded.push(table);
      }
      return { name, shape: await shapeOf(client, name), migrations: await migrationsOf(client, name), tables, seeded };
    });
  })().catch(() => null);
  templates.set(kind, template);
  return template;
}

function freePrefix(run: string, kind: PoolKind): string {
  return kind === 'store' ? `tsrv_${run}_free_` : `tsrv_${run}_sfree_`;
}

/**
 * Renames a pooled schema to `name` and returns true, or returns false when the pool is empty (or off):
 * the caller then creates `name` itself. Two workers may pick the same pooled schema; the rename lets one
 * have it and the other tries the next.
 */
export async function claimPooledSchema(url: string, run: string, name: string, kind: PoolKind): Promise<boolean> {
  if ((await templateOf(url, kind)) === null) return false;
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ name: string }>(
      "SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY random() LIMIT 8",
      [freePrefix(run, kind)],
    );
    for (const { name: free } of rows) {
      try {
        await client.query(`ALTER SCHEMA ${quote(free)} RENAME TO ${quote(name)}`);
        return true;
      } catch (err) {
        // Taken by another worker a moment ago (gone), or being taken by one right now: PostgreSQL answers two
        // concurrent renames of one schema with "tuple concurrently updated" (XX000) rather than a wait.
        const code = (err as { code?: string }).code;
        if (code !== '3F000' && !(code === 'XX000' && /tuple concurrently updated/.test(String((err as Error).message)))) throw err;
      }
    }
    return false;
  });
}

/**
 * Empties `schema` back to a freshly migrated one and puts it in the pool; false when it is not the
 * template's shape (or anything fails), and the caller drops it.
 */
export async function poolSchema(url: string, run: string, schema: string, kind: PoolKind): Promise<boolean> {
  const tpl = await templateOf(url, kind);
  if (tpl === null) return false;
  try {
    return await withClient(url, async (client) => {
      if ((await shapeOf(client, schema)) !== tpl.shape || (await migrationsOf(client, schema)) !== tpl.migrations) return false;
      const target = quote(schema);
      const statements = [
        'BEGIN',
        // A server that did not let go of a lock is a reason to drop, not to wait.
        "SET LOCAL lock_timeout = '5s'",
        // Neither foreign keys nor triggers (the credential epoch's) between the deletes: every row goes.
        'SET LOCAL session_replication_role = replica',
        ...tpl.tables.map((table) => `DELETE FROM ${target}.${quote(table)}`),
        ...tpl.seeded.map((table) => `INSERT INTO ${target}.${quote(table)} SELECT * FROM ${quote(tpl.name)}.${quote(table)}`),
        `ALTER SCHEMA ${target} RENAME TO ${quote(`${freePrefix(run, kind)}${randomUUID().replace(/-/g, '').slice(0, 12)}`)}`,
        'COMMIT',
      ];
      try {
        await client.query(statements.join(';\n'));
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
      return true;
    });
  } catch {
    return false;
  }
}
