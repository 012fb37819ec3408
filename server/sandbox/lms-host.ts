/**
 * The Sandbox's LMS: the reference LMS (`lms/`), run inside the service only as a convenience, mounted at
 * `{PUBLIC_URL}/lms` (its issuer). The service still reaches it only over HTTP, through its public
 * endpoints and controls (`lms-client.ts`), exactly as it reaches a school's LMS (decision LTI-40).
 *
 * It is made on first need, because the service learns its own URL only once it listens (tests, PORT=0).
 * Its store is `DATA_DIR/sandbox-lms.sqlite` when the service's own store is SQLite; with PostgreSQL it is
 * the service's database and schema (`lms_` tables), so every instance answers for one Sandbox LMS and a
 * restart keeps it (decision LTI-80, replacing LTI-41's store in memory per instance).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ReferenceLms } from '../../lms/app.js';
import type { LmsStoreLocation } from '../../lms/store.js';
import type { Config } from '../config.js';
import type { Logger } from '../http/log.js';
import { schemas } from '../../generated/dashboard/schemas.js';
import { Problem } from '../http/problem.js';

export const SANDBOX_LMS_MOUNT = '/lms';
/** The route every request of the Sandbox's LMS is logged and timed under: its paths are the LMS's own. */
export const SANDBOX_LMS_ROUTE = `${SANDBOX_LMS_MOUNT}/*`;

/** Whether a request path is the Sandbox LMS's (the mount itself or under it). */
export function isSandboxLmsPath(path: string): boolean {
  return path === SANDBOX_LMS_MOUNT || path.startsWith(`${SANDBOX_LMS_MOUNT}/`);
}

declare module '../http/services.js' {
  interface Services {
    /** The Sandbox's LMS, in process (decision LTI-40). */
    sandboxLms: SandboxLmsHost;
  }
}

export interface SandboxLmsHost {
  /** The LMS's issuer: `{PUBLIC_URL}/lms`. */
  issuer(): string;
  /** The control token of the in-process LMS; it never leaves the process. */
  readonly controlToken: string;
  /** Answers a request under `/lms`; false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** The running LMS, made on first need. */
  ready(): Promise<ReferenceLms>;
  /** Where this process reaches a URL of its own public origin. */
  transport(url: string): string;
  close(): void;
}

export interface SandboxLmsHostOptions {
  config: Pick<Config, 'publicUrl' | 'dataDir' | 'databaseUrl' | 'databaseSchema'>;
  log: Logger;
  /** Where this process reaches its own public origin, when that does not route back to it (tests). */
  selfOrigin?: () => string | undefined;
}

/** A URL of the service's public origin, rewritten to where this process listens when that is known. */
export function selfTransport(publicUrl: string, selfOrigin: (() => string | undefined) | undefined): (url: string) => string {
  const publicOrigin = new URL(publicUrl).origin;
  return (url) => {
    const target = selfOrigin?.();
    if (!target || !url.startsWith(`${publicOrigin}/`)) return url;
    return `${new URL(target).origin}${url.slice(publicOrigin.length)}`;
  };
}

/** Where the Sandbox's LMS keeps its store: beside the service's own, in the same kind (decision LTI-80). */
export function sandboxLmsStore(config: Pick<Config, 'dataDir' | 'databaseUrl' | 'databaseSchema'>): LmsStoreLocation {
  if (config.databaseUrl === null) return { file: join(config.dataDir, SANDBOX_LMS_DB_FILE) };
  return { databaseUrl: config.databaseUrl, ...(config.databaseSchema === null ? {} : { schema: config.databaseSchema }) };
}

export const SANDBOX_LMS_DB_FILE = 'sandbox-lms.sqlite';

export function createSandboxLmsHost(options: SandboxLmsHostOptions): SandboxLmsHost {
  const transport = selfTransport(options.config.publicUrl, options.selfOrigin);
  const controlToken = `lmsc_${randomBytes(24).toString('base64url')}`;
  const issuer = (): string => `${new URL(options.config.publicUrl).origin}${SANDBOX_LMS_MOUNT}`;
  let lms: Promise<ReferenceLms> | null = null;
  const ready = (): Promise<ReferenceLms> => {
    // Loaded on first need, not at start: the LMS and its store drivers are a large share of a cold start
    // (PERF-39), and a tool's first request never needs them.
    lms ??= import('../../lms/app.js').then(({ createReferenceLms }) =>
      createReferenceLms({
        issuer: issuer(),
        store: sandboxLmsStore(options.config),
        controlToken,
        // The LMS fetches the service's JWKS at its public URL: through the same transport as grades.
        fetch: (url, init) => fetch(transport(url), init),
        onError: (err) => options.log.error('the Sandbox LMS could not answer a request', { err }),
      }),
    );
    // A start that failed (an unwritable DATA_DIR, the database away) is tried again at the next need, not remembered.
    lms.catch(() => {
      lms = null;
    });
    return lms;
  };
  return {
    issuer,
    controlToken,
    ready,
    transport,
    async handle(req, res) {
      if (!isSandboxLmsPath((req.url ?? '/').split('?')[0] ?? '/')) return false;
      let lms: ReferenceLms;
      try {
        lms = await ready();
      } catch (err) {
        // Its store cannot be opened (an unwritable DATA_DIR, the database away): the service's fault, never the caller's.
        options.log.error('the Sandbox LMS could not start', { err });
        throw sandboxLmsUnavailable();
      }
      return lms.handle(req, res);
    },
    close() {
      void lms?.then((l) => l.close());
    },
  };
}

/** The Sandbox's LMS cannot start or answer: the service's fault, a 503 to retry, never a 500 (LTI-40, LTI-52). */
export function sandboxLmsUnavailable(cause?: unknown): Problem {
  return new Problem(503, 'sandbox_lms_unavailable', schemas.SandboxLmsCourse['x-messages'].unavailable, {
    headers: { 'Retry-After': '1' },
    ...(cause === undefined ? {} : { cause }),
  });
}
