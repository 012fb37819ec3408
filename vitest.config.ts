import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'node',
    include: ['tests/**/*.test.ts'],
    // Tests start real servers, Prism and Chromium; a slow CI box needs the headroom.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Forks isolate native modules (better-sqlite3) and child processes better than worker threads.
    pool: 'forks',
  },
});
