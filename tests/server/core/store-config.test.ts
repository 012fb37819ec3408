/** The store lines of the configuration: `DATABASE_URL` picks PostgreSQL, nothing falls back silently. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../server/config.js';

function problemsOf(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.join('\n');
  }
  throw new Error('the configuration was accepted');
}

describe('store configuration', () => {
  it('defaults to SQLite under DATA_DIR with blobs on the local disk', () => {
    expect(loadConfig({}, '/srv/tis')).toMatchObject({
      databaseUrl: null,
      databaseSchema: null,
      databasePoolSize: 10,
      blobStore: 'local',
    });
  });

  it('reads DATABASE_URL, DATABASE_SCHEMA, DATABASE_POOL_SIZE and BLOB_STORE', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgresql://tis:secret@db.example.edu:5432/tis?sslmode=require',
      DATABASE_SCHEMA: 'tis_prod',
      DATABASE_POOL_SIZE: '20',
      BLOB_STORE: 'postgres',
    });
    expect(config).toMatchObject({
      databaseUrl: 'postgresql://tis:secret@db.example.edu:5432/tis?sslmode=require',
      databaseSchema: 'tis_prod',
      databasePoolSize: 20,
      blobStore: 'postgres',
    });
    expect(loadConfig({ DATABASE_URL: 'postgres://tis@127.0.0.1/tis' }).blobStore).toBe('local');
  });

  it('refuses a URL of another database, without repeating the password', () => {
    const problems = problemsOf({ DATABASE_URL: 'mysql://tis:hunter2@db.example.edu/tis' });
    expect(problems).toContain('DATABASE_URL must start with postgres:// or postgresql://');
    expect(problems).not.toContain('hunter2');
    expect(problemsOf({ DATABASE_URL: 'not a url hunter2' })).not.toContain('hunter2');
  });

  it('refuses the shared blob store or a schema without a database, and a bad schema name', () => {
    expect(problemsOf({ BLOB_STORE: 'postgres' })).toContain('BLOB_STORE=postgres keeps files in the PostgreSQL database, so it needs DATABASE_URL');
    expect(problemsOf({ DATABASE_SCHEMA: 'tis' })).toContain('DATABASE_SCHEMA is set but DATABASE_URL is not');
    expect(problemsOf({ BLOB_STORE: 'gcs' })).toContain('BLOB_STORE must be one of local, postgres, s3');
    expect(problemsOf({ DATABASE_URL: 'postgres://db/tis', DATABASE_SCHEMA: 'Tis; DROP' })).toContain('DATABASE_SCHEMA must be a lower-case SQL identifier');
    expect(
      problemsOf({ DATABASE_URL: 'postgres://db/tis?options=-c%20search_path%3Dother', DATABASE_SCHEMA: 'tis' }),
    ).toContain('cannot be combined');
    expect(problemsOf({ DATABASE_URL: 'postgres://db/tis', DATABASE_POOL_SIZE: '0' })).toContain('DATABASE_POOL_SIZE');
  });
});
