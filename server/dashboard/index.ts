/**
 * The dashboard API (decisions L-08, NS-10, NS-11, S-07, S-08, S-13): builders and their credentials,
 * registration and settings of tools, the platform team's activate and suspend, key rotation, the grade
 * history, and the Sandbox. Mounted by `dashboardPipeline` (mount.ts).
 */
import type { PlatformCredential } from './credentials.js';

declare module '../http/services.js' {
  interface Services {
    /** The platform team's dashboard token, as this process checks it (S-07). */
    platformCredential: PlatformCredential;
  }
}

export * from './credentials.js';
export * from './mount.js';
