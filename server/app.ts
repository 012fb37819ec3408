/**
 * Composition: services, the Express app and the HTTP server. `npm start` (server/main.ts) and the test
 * harness both start the service through `startService`, so tests run exactly what production runs.
 */
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import express from 'express';
import type { Express, NextFunction, Request, Response } from 'express';
import type { Resolver } from '../rules/endpoint-url.js';
import { CONTRACT_VERSIONS } from '../rules/locations.js';
import type { Config } from './config.js';
import { contract20260819 } from './contracts/2026-08-19/index.js';
import { contract20260825 } from './contracts/2026-08-25/index.js';
import { contract20260921 } from './contracts/2026-09-21/index.js';
import type { EpochHolder } from './auth/credential-facts.js';
import { credentialFactsOf, StaleCredentialEpochError } from './auth/credential-facts.js';
import { pinnedContract } from './contracts/pin.js';
import type { Logger } from './http/log.js';
import { createLogger } from './http/log.js';
import type { ContractDefinition } from './http/pipeline.js';
import { contractPipeline } from './http/pipeline.js';
import { requestLocals } from './http/locals.js';
import { internalError, isProblem, Problem, PROBLEM_CONTENT_TYPE, reasonPhrase } from './http/problem.js';
import { markNoStore } from './http/no-store.js';
import { CredentialThrottle, DEFAULT_THROTTLE_LIMITS } from './throttle/index.js';
import { flagDevelopmentUrls } from './outbound/development-urls.js';
import { requestContext, stampContractVersion } from './http/request-context.js';
import { createFrontServer, handOver } from './http/front.js';
import type { ContractResponse, FrontEntry } from './http/front.js';
import { OperationRouter } from './http/routes.js';
import type { Services } from './http/services.js';
import { dashboardPipeline, loadPlatformCredential } from './dashboard/index.js';
import { createFileServices, ObjectStoreUnavailableError } from './files/index.js';
import { launchPageRoute } from './launch-page/mount.js';
import { createLtiServices, ltiPlatforms, ltiRoutes } from './lti/index.js';
import { webDashboardRoute } from './web-dashboard/router.js';
import { LaunchService } from './launches/service.js';
import type { Connector } from './outbound/index.js';
import { createToolHttpClient, systemResolver } from './outbound/index.js';
import { createSandboxLmsHost, isSandboxLmsPath, SANDBOX_LMS_ROUTE } from './sandbox/lms-host.js';
import { clientAddressResolver, describeTrustProxy } from './http/client-address.js';
import type { RequestHooks } from './http/request-context.js';
import { countingPublisher, lmsRequestKind, ServiceMetrics } from './metrics/index.js';
import { listenForMetrics, metricsRoute } from './metrics/serve.js';
import { createDefaultPublisher } from './scores/index.js';
import { Signer } from './signing/signer.js';
import type { Clock, Store } from './store/index.js';
import { openStore, StoreBusyError, StoreClosedError, systemClock, UnstorableTextError } from './store/index.js';

export const CURRENT_CONTRACT_VERSION = '2026-09-21';

/** Every contract a tool may select (NS-18); this build serves the ones in `createApp`'s `contracts`. */
export const KNOWN_CONTRACT_VERSIONS: readonly string[] = CONTRACT_VERSIONS;

export interface AppOptions {
  /** The served contracts by version; defaults to all three contracts with their real handlers. */
  contracts?: readonly ContractDefinition[];
  /** Answer /healthz with 503 from now on (the load balancer stops sending new requests). */
  isShuttingDown?: () => boolean;
}

export function sendProblem(res: Response, problem: Problem): void {
  const locals = requestLocals(res);
  const body = problem.toBody(locals.requestId);
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.status(problem.status);
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.setHeader('Cache-Control', 'no-store');
  // Written with `end`, not `json`: problems are not run through the response validator, whose per-
  // operation status lists cannot know 405 or a Contract-Version 400.
  res.end(JSON.stringify(body));
}

function toProblem(err: unknown, log: Logger): Problem {
  if (isProblem(err)) {
    if (err.status >= 500) log.error('server problem', { err, code: err.code });
    return err;
  }
  if (err instanceof StoreBusyError) {
    log.warn('store busy', { err });
    return new Problem(503, 'store_busy', 'the service is busy; retry shortly', { headers: { 'Retry-After': '1' } });
  }
  if (err instanceof ObjectStoreUnavailableError) {
    // The bucket is unreachable or failing (OBJ-10): passing, not the caller's fault; the shape of store_busy.
    log.warn('object store unavailable', { err, operation: err.operation });
    return new Problem(503, 'object_store_unavailable', 'the file store cannot be reached; retry shortly', { headers: { 'Retry-After': '1' } });
  }
  if (err instanceof UnstorableTextError) {
    // Text a caller sent with U+0000 in a field no validation names; PostgreSQL could not store it.
    return new Problem(422, 'unstorable_text', 'text containing the NUL character (U+0000) cannot be stored');
  }
  if (err instanceof StoreClosedError) {
    return new Problem(503, 'shutting_down', 'the service is shutting down; retry shortly', { headers: { 'Retry-After': '1' } });
  }
  // A 4xx raised by Express or a library below it (a malformed URL, an aborted body): the caller's fault,
  // answered in the envelope with a generic detail rather than the library's wording.
  const status = (err as { status?: unknown; statusCode?: unknown } | null)?.status ?? (err as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 500) {
    log.info('request refused below the pipeline', { err, status });
    return new Problem(status, 'invalid_request', `the request was refused (${reasonPhrase(status)})`);
  }
  log.error('unexpected error', { err });
  return internalError(err);
}

/** The service's HTTP server, not yet listening: what `startService` listens with, for a server of a test's own. */
export function createHttpServer(services: Services, options: AppOptions = {}): Server {
  return createFrontServer(createPipeline(services, options));
}

/**
 * The one request pipeline (decision KIT-63). Every request takes the same steps, written once, in this
 * order: the request context (id, headers, client address, access line), `no-store` with credentials, the
 * throttle's gate (not for the Sandbox's LMS, H-22), then a contract operation's path is dispatched on the
 * front's own objects (PERF-60) and anything else is handed to the Express app (health, metrics, dashboard,
 * launch page, LTI, the web dashboard); a thrown error from either is answered by `answerError`.
 */
function createPipeline(services: Services, options: AppOptions = {}): FrontEntry {
  const contracts = options.contracts ?? [contract20260921, contract20260825, contract20260819];
  const isShuttingDown = options.isShuttingDown ?? (() => false);
  const app = express();
  app.disable('x-powered-by');
  // ETags would let Express answer 304, a status no operation lists; rows are small and uncached anyway.
  app.set('etag', false);
  // Query strings are not part of this contract's operations; the simple parser cannot be made to nest.
  app.set('query parser', 'simple');

  const served = new Map<string, ReturnType<typeof contractPipeline>>();
  for (const contract of contracts) {
    served.set(
      contract.version,
      contractPipeline(contract, services, {
        responseValidation: services.config.responseValidation,
        bodyLimitBytes: services.config.httpBodyLimitBytes,
      }),
    );
  }
  const routes = new Map(contracts.map((c) => [c.version, new OperationRouter(Object.values(c.operations))]));
  const hasRoute = (version: string, req: Request): boolean => {
    const router = routes.get(version);
    return router !== undefined && router.lookup(req.method, req.path).kind !== 'not_found';
  };
  const contractPaths = [...routes.values()];
  const isContractPath = (path: string): boolean => contractPaths.some((router) => router.has(path));
  const servedVersionOf = (res: Response): string =>
    (res.locals as { contractVersion?: string }).contractVersion ?? CURRENT_CONTRACT_VERSION;

  // Both fronts' per-request hooks, in one object (H-20, OPS-10).
  const metrics = services.metrics;
  const hooks: RequestHooks = {
    clientAddress: clientAddressResolver(services.config.trustProxy),
    ...(metrics.enabled ? { finished: (method, operation, status, seconds) => metrics.request(method, operation, status, seconds) } : {}),
  };
  const throttle = new CredentialThrottle(
    services.store,
    services.clock,
    services.log,
    {
      ...DEFAULT_THROTTLE_LIMITS,
      perAddress: services.config.authFailuresPerAddress,
      perCredential: services.config.authFailuresPerCredential,
    },
    metrics,
  );
  app.get('/healthz', async (_req: Request, res: Response) => {
    const locals = requestLocals(res);
    locals.route = '/healthz';
    if (isShuttingDown()) {
      sendProblem(res, new Problem(503, 'shutting_down', 'the service is shutting down'));
      return;
    }
    try {
      await services.store.driver.get('SELECT 1 AS ok');
      res.setHeader('Cache-Control', 'no-store');
      res.status(200).json({ status: 'ok', store: 'ok' });
    } catch (err) {
      locals.log.error('health check failed', { err });
      sendProblem(res, new Problem(503, 'store_unavailable', 'the store is not answering'));
    }
  });

  // The platform team's metrics (OPS-11).
  app.use(metricsRoute(services));

  // The Sandbox's LMS (LTI-40): the reference LMS in process under /lms, an LTI platform like any school's.
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (isSandboxLmsPath(req.path)) requestLocals(res).route = SANDBOX_LMS_ROUTE;
    services.sandboxLms.handle(req, res).then((handled) => (handled ? undefined : next()), next);
  });

  // The dashboard API (L-08, S-07): the platform team's and builders' operations and the Sandbox.
  app.use(
    dashboardPipeline(services, {
      responseValidation: services.config.responseValidation,
      bodyLimitBytes: services.config.httpBodyLimitBytes,
    }),
  );

  // The browser launch page (L-08, S-10): HTML, authenticated by its ticket alone.
  app.use(launchPageRoute(services));
  // The LMS-facing side (LTI-02): the service as an LTI 1.3 tool toward schools' LMSes.
  app.use(ltiRoutes(services));
  // The web dashboard's static files under /dashboard/ (L-08); /dashboard/v1 passes through to the API.
  app.use(webDashboardRoute());

  // Contract selection (NS-18): the `Contract-Version` header, else the calling tool's pin, else the
  // current contract. Each contract runs in its own pipeline with its own validator (one per bundled
  // spec), so requests and responses are judged by the spec of the contract that serves them.
  app.use(dispatchContract);
  async function dispatchContract(req: Request, res: Response, next: NextFunction): Promise<void> {
    try {
      const header = req.headers['contract-version'];
      const requested = Array.isArray(header) ? header.join(',') : header?.trim();
      let version: string;
      if (requested !== undefined) {
        if (!KNOWN_CONTRACT_VERSIONS.includes(requested)) {
          // Through `next`, as every answer of a contract path: it confirms a trusted epoch first (PERF-180).
          next(
            new Problem(
              400,
              'unknown_contract_version',
              `unknown Contract-Version "${requested}"; served versions: ${KNOWN_CONTRACT_VERSIONS.join(', ')}`,
            ),
          );
          return;
        }
        version = requested;
      } else {
        const credentials = credentialFactsOf(services.store, services.clock).requestStore(res.locals);
        requestLocals(res).credentialStore = credentials;
        const pinned = await pinnedContract(credentials, req.headers.authorization);
        version = pinned.version !== null && served.has(pinned.version) ? pinned.version : CURRENT_CONTRACT_VERSION;
        if (pinned.credential && pinned.version === null && !hasRoute(version, req)) {
          // A credential that names no tool, on a path only an archived contract has: that contract's
          // credential step answers its 401, rather than the current contract's 404 (S-37).
          version = contracts.find((c) => hasRoute(c.version, req))?.version ?? version;
        }
      }
      const pipeline = served.get(version);
      if (!pipeline) {
        next(new Problem(400, 'contract_not_served', `contract ${version} is not served by this build`));
        return;
      }
      (res.locals as { contractVersion?: string }).contractVersion = version;
      pipeline(req, res, next);
    } catch (err) {
      next(err);
    }
  }

  app.use((req: Request, res: Response) => notFound(req, res));

  /**
   * Answers a thrown error as a problem; a refused credential is counted first (H-05). A request that took
   * the credential epoch on trust confirms it first, and one that finds it stale is run again from its
   * start instead of answering what the old facts said (PERF-180).
   */
  function answerError(err: unknown, req: Request, res: Response): void {
    const holder = res.locals as EpochHolder & RestartHolder;
    const facts = credentialFactsOf(services.store, services.clock);
    if (err instanceof StaleCredentialEpochError || facts.unconfirmed(holder)) {
      facts.confirm(holder).then(
        () => answerConfirmed(err, req, res),
        (confirmErr: unknown) => {
          if (confirmErr instanceof StaleCredentialEpochError && holder.restartRequest && !res.headersSent) {
            facts.restart(holder);
            holder.restartRequest();
          } else {
            answerConfirmed(confirmErr instanceof StaleCredentialEpochError ? err : confirmErr, req, res);
          }
        },
      );
      return;
    }
    answerConfirmed(err, req, res);
  }

  function answerConfirmed(err: unknown, req: Request, res: Response): void {
    const log = requestLocals(res).log ?? services.log;
    const problem = toProblem(err, log);
    if (res.headersSent) {
      log.error('error after the response started; closing the connection', { err });
      res.destroy();
      return;
    }
    // A refused credential is counted before the answer leaves (H-05); counting never loses the answer.
    throttle.failed(req, res, problem, log).then(
      () => sendProblem(res, problem),
      (countErr: unknown) => {
        log.error('failed authentication not counted', { err: countErr });
        sendProblem(res, problem);
      },
    );
  }

  app.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (!requestLocals(res).requestId) {
      next(err);
      return;
    }
    answerError(err, req, res);
  });

  const notFound = (req: Request, res: Response): void =>
    sendProblem(res, new Problem(404, 'not_found', `no operation at ${req.method} ${req.path}`));
  const contractHeaders = (res: ContractResponse): void => stampContractVersion(res as unknown as Response, servedVersionOf);
  return (contractReq, contractRes) => {
    // The front's objects carry what the steps read of Express's (server/http/front.ts).
    const req = contractReq as unknown as Request;
    const res = contractRes as unknown as Response;
    const next = (err?: unknown): void => {
      if (err) answerError(err, req, res);
      else notFound(req, res);
    };
    try {
      requestContext(services.log, contractReq, contractRes, contractHeaders, hooks);
      markNoStore(req, res);
      const pathname = contractReq.target.pathname;
      // The Sandbox's LMS is a platform of its own with its own credentials, which this throttle never
      // counts: its requests (the service's own score and control calls among them) are not judged by
      // failures at the service's credentials, from whatever address (H-22).
      const contractPath = pathname !== null && isContractPath(pathname);
      const admit = (): void => {
        const gate = pathname !== null && isSandboxLmsPath(pathname) ? NOT_THROTTLED : throttle.check(req, res);
        gate.then((problem) => {
          if (problem) next(problem);
          else if (contractPath) void dispatchContract(req, res, next);
          else handOver(app, contractReq, contractRes);
        }, next);
      };
      // A contract operation confirms the epoch with its own first statement (PERF-180): every exit of its
      // pipeline confirms before it answers, writes or reads the body, so it can be run again from here.
      if (contractPath && credentialFactsOf(services.store, services.clock).trustLatest(res.locals as EpochHolder)) {
        (res.locals as RestartHolder).restartRequest = admit;
      }
      admit();
    } catch (err) {
      next(err);
    }
  };
}

const NOT_THROTTLED: Promise<null> = Promise.resolve(null);

/** A contract request that took the credential epoch on trust: how to run it again should it be stale. */
interface RestartHolder {
  restartRequest?: () => void;
}

export interface BuildServicesOptions {
  store?: Store;
  log?: Logger;
  clock?: Clock;
  /**
   * Where this process can reach itself (its listening URL), for calls the service makes to its own
   * Sandbox LMS when `PUBLIC_URL` does not route back to it (a proxy without hairpinning, tests).
   */
  selfOrigin?: () => string | undefined;
  /** How tool host names are resolved for the endpoint URL rules; default `dns.promises.lookup`. */
  toolResolver?: Resolver;
  /** How sockets to tools are opened; default through the vetted addresses only (tests record them). */
  toolConnector?: Connector;
}

/** SQLite under `DATA_DIR`, or PostgreSQL when `DATABASE_URL` is set (decision S-33). */
export function openConfiguredStore(
  config: Pick<Config, 'dataDir' | 'databaseUrl' | 'databaseSchema' | 'databasePoolSize'>,
  clock: Clock = systemClock,
): Promise<Store> {
  if (config.databaseUrl === null) return openStore({ dataDir: config.dataDir, clock });
  return openStore({
    databaseUrl: config.databaseUrl,
    ...(config.databaseSchema === null ? {} : { schema: config.databaseSchema }),
    maxConnections: config.databasePoolSize,
    clock,
  });
}

/** Opens the store (unless given) and builds every service; the caller owns `store.close()`. */
export async function buildServices(config: Config, options: BuildServicesOptions = {}): Promise<Services> {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? createLogger({ level: config.logLevel });
  // DATA_DIR holds the SQLite file and the local blobs; with PostgreSQL for both it is not needed.
  if (!options.store && (config.databaseUrl === null || config.blobStore === 'local')) mkdirSync(config.dataDir, { recursive: true });
  const store = options.store ?? (await openConfiguredStore(config, clock));
  const signer = new Signer(store, { clock });
  await signer.init();
  const launches = new LaunchService({
    store,
    signer,
    publicUrl: config.publicUrl,
    apiTokenTtlSeconds: config.apiTokenTtlSeconds,
    clock,
  });
  const { blobs, files } = await createFileServices({ store, config, clock, log });
  const metrics = new ServiceMetrics(config.metrics);
  metrics.watchPool(store.driver);
  const outbound = createToolHttpClient({
    resolve: options.toolResolver ?? systemResolver,
    allowLoopback: config.allowLoopbackTools,
    ...(options.toolConnector ? { connect: options.toolConnector } : {}),
    log,
    observe: (kind, seconds) => metrics.toolRequest(kind, seconds),
  });
  const sandboxLms = createSandboxLmsHost({ config, log, ...(options.selfOrigin ? { selfOrigin: options.selfOrigin } : {}) });
  // The Sandbox's LMS is the service itself: its URLs need no development switch (decision LTI-43).
  const lti = createLtiServices({ outbound, clock, ownLms: sandboxLms, observe: (request, seconds) => {
      const kind = lmsRequestKind(request);
      if (kind !== null) metrics.lmsRequest(kind, seconds);
    },
  });
  const publisher = countingPublisher(
    createDefaultPublisher({
      signer,
      schools: ltiPlatforms(store, lti.lms),
      clock,
    }),
    metrics,
  );
  const platformCredential = loadPlatformCredential(config, log);
  return { store, config, signer, clock, log, launches, blobs, files, publisher, outbound, platformCredential, lti, sandboxLms, metrics };
}

export interface RunningService {
  server: Server;
  /** Where the server listens (its real port when `PORT=0`). */
  url: string;
  /** `/metrics` on the `METRICS_PORT` listener (its real port when `0`), or null without one. */
  metricsUrl: string | null;
  services: Services;
  /** Graceful stop: refuse new connections, let requests in flight finish, then close the store. */
  stop(): Promise<void>;
}

export interface StartOptions extends BuildServicesOptions, AppOptions {
  services?: Services;
}

export async function startService(config: Config, options: StartOptions = {}): Promise<RunningService> {
  let listeningUrl: string | undefined;
  const services = options.services ?? (await buildServices(config, { selfOrigin: () => listeningUrl, ...options }));
  await flagDevelopmentUrls(services.store, config.allowLoopbackTools, services.log);
  let shuttingDown = false;
  const entry = createPipeline(services, { ...options, isShuttingDown: () => shuttingDown });
  let server: Server;
  try {
    server = await new Promise<Server>((resolve, reject) => {
      const s = createFrontServer(entry);
      s.once('error', reject);
      s.listen(config.port, config.host, () => resolve(s));
    });
  } catch (err) {
    // The store was opened for this server; a failed listen (port taken) must not leave it open.
    if (!options.services) await services.store.close();
    throw err;
  }
  // The metrics' own listener (OPS-11), after the service's: a port in use stops the start like the service's.
  let metricsServer: Server | null = null;
  if (config.metrics && config.metricsPort !== null) {
    try {
      metricsServer = await listenForMetrics(services.metrics, config.metricsHost, config.metricsPort, services.log);
    } catch (err) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (!options.services) await services.store.close();
      throw err;
    }
  }
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  listeningUrl = url;
  const metricsAddress = metricsServer?.address() as AddressInfo | undefined;
  const metricsUrl = metricsAddress ? `http://${metricsAddress.family === 'IPv6' ? `[${metricsAddress.address}]` : metricsAddress.address}:${metricsAddress.port}/metrics` : null;
  if (config.trustProxy.kind !== 'none') services.log.info('trusting proxies for the client address', { trust_proxy: describeTrustProxy(config.trustProxy) });
  if (metricsUrl !== null) services.log.info('metrics listening, without a credential', { metrics_url: metricsUrl });

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      shuttingDown = true;
      services.log.info('shutting down: no new connections; finishing requests in flight');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections with no request in flight would hold `close` open until they time out.
      server.closeIdleConnections();
      const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
      const force = setTimeout(() => {
        services.log.warn('shutdown grace period over; closing remaining connections', { open: sockets.size });
        server.closeAllConnections();
      }, config.shutdownGraceMs);
      force.unref();
      await closed;
      if (metricsServer) {
        const metricsClosed = new Promise<void>((resolve) => metricsServer?.close(() => resolve()));
        metricsServer.closeAllConnections();
        await metricsClosed;
      }
      clearInterval(idleSweep);
      clearTimeout(force);
      await services.blobs.close?.();
      services.sandboxLms.close();
      await services.store.close();
      services.log.info('stopped');
    })();
    return stopping;
  };
  return { server, url, metricsUrl, services, stop };
}
