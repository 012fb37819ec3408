/**
 * What `npm start` prints once it listens (issue 29): where the web dashboard is and where the platform
 * team's token is, so a fresh install needs no second README to find its way in (decision OPS-41).
 */
import { join } from 'node:path';
import type { Config } from './config.js';
import { PLATFORM_TOKEN_FILE } from './dashboard/credentials.js';

export function nextSteps(config: Pick<Config, 'platformToken' | 'dataDir' | 'allowLoopbackTools'>, listeningUrl: string): string {
  const token =
    config.platformToken === null
      ? `the platform team's token is in ${join(config.dataDir, PLATFORM_TOKEN_FILE)} (cat it; it is written at first start)`
      : "the platform team's token is the PLATFORM_TOKEN this service was started with";
  const lines = [
    `  Dashboard:  ${listeningUrl}/dashboard/`,
    `  Sign in:    ${token}`,
    `  Health:     ${listeningUrl}/healthz`,
  ];
  if (config.allowLoopbackTools) lines.push('  Development mode: tool URLs on 127.0.0.1 / localhost are accepted (ALLOW_LOOPBACK_TOOLS=1).');
  return `${lines.join('\n')}\n`;
}
