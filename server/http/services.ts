/**
 * The service container handed to every handler (`ctx.services`). One instance per running app.
 *
 * The core owns the services below. A helper module that adds a service of its own (the blob store,
 * the score publisher, ...) declares its type here by declaration merging, from its own folder:
 *
 *   declare module '../http/services.js' {
 *     interface Services { blobs: BlobStore }
 *   }
 *
 * and `server/app.ts` constructs it; a declared service that the app does not construct is a compile
 * error in `buildServices`, so the two cannot drift apart.
 */
import type { Config } from '../config.js';
import type { LaunchService } from '../launches/service.js';
import type { Signer } from '../signing/signer.js';
import type { Clock, Store } from '../store/index.js';
import type { Logger } from './log.js';

export interface CoreServices {
  store: Store;
  config: Config;
  signer: Signer;
  clock: Clock;
  /** The app-wide logger; handlers use `ctx.log`, which carries the request id. */
  log: Logger;
  launches: LaunchService;
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- extended by declaration merging
export interface Services extends CoreServices {}
