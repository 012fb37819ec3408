/** Configuration from the environment: defaults, and a start refused with every bad value named. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../server/config.js';

describe('loadConfig', () => {
  it('has safe defaults', () => {
    const c = loadConfig({}, '/srv/tis');
    expect(c).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      dataDir: '/srv/tis/data',
      publicUrl: 'http://127.0.0.1:3000',
      apiTokenTtlSeconds: 14_400,
      responseValidation: true,
      logLevel: 'info',
      allowLoopbackTools: false,
      httpBodyLimitBytes: 2_097_152,
    });
  });

  it('turns response validation off by default in production only', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).responseValidation).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', RESPONSE_VALIDATION: 'on' }).responseValidation).toBe(true);
  });

  it('reads PUBLIC_URL as an origin', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://tis.example.edu/' }).publicUrl).toBe('https://tis.example.edu');
    expect(loadConfig({ PUBLIC_URL: 'https://tis.example.edu:8443' }).publicUrl).toBe('https://tis.example.edu:8443');
    expect(loadConfig({ HOST: '0.0.0.0', PORT: '8080' }).publicUrl).toBe('http://localhost:8080');
  });

  it('refuses bad values, naming each one', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        PUBLIC_URL: 'https://tis.example.edu/v1',
        API_TOKEN_TTL_SECONDS: '5',
        LOG_LEVEL: 'chatty',
        RESPONSE_VALIDATION: 'maybe',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of ['PORT', 'PUBLIC_URL', 'API_TOKEN_TTL_SECONDS', 'LOG_LEVEL', 'RESPONSE_VALIDATION']) {
      expect(problems).toContain(name);
    }
  });

  it('refuses a HOST the URL parser cannot read, and says one line per problem, each naming its variable (OPS-30)', () => {
    expect(() => loadConfig({ HOST: '999.1.1.1' })).toThrow('invalid configuration: HOST must be a host name or IP address, got "999.1.1.1"');
    expect(() => loadConfig({ HOST: 'tis example' })).toThrow(/^invalid configuration: HOST /);
    expect(loadConfig({ HOST: '::1' }).publicUrl).toBe('http://[::1]:3000');
    expect(loadConfig({ HOST: 'tis.internal' }).host).toBe('tis.internal');
    let error: unknown;
    try {
      loadConfig({ PORT: 'abc', S3_BUCKET: 'files', DATABASE_SCHEMA: 'tis' });
    } catch (err) {
      error = err;
    }
    const lines = (error as ConfigError).message.split('\n');
    expect(lines).toEqual([
      'invalid configuration: PORT must be a whole number, got "abc"',
      expect.stringMatching(/^invalid configuration: DATABASE_SCHEMA is set but DATABASE_URL is not/),
      expect.stringMatching(/^invalid configuration: S3_BUCKET is set but BLOB_STORE is not s3$/),
    ]);
  });

  it('never allows loopback tools in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', ALLOW_LOOPBACK_TOOLS: '1' })).toThrow(/ALLOW_LOOPBACK_TOOLS/);
    expect(loadConfig({ ALLOW_LOOPBACK_TOOLS: 'true' }).allowLoopbackTools).toBe(true);
  });
});
