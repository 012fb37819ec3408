// Types of the typed clients: openapi-fetch's own client shape, with every error narrowed to the
// service's envelope. The runtime (index.ts) guarantees that narrowing: its middleware turns any
// error body that is not the envelope into one.

import type { Client, FetchResponse, MaybeOptionalInit, Middleware } from 'openapi-fetch';
import type * as Current from '../generated/2026-09-21/types.js';
import type * as Archived0825 from '../generated/2026-08-25/types.js';
import type * as Archived0819 from '../generated/2026-08-19/types.js';
import type * as Dashboard from '../generated/dashboard/types.js';
import type { ContractVersion as GeneratedContractVersion } from '../generated/index.js';

/** The `paths` of each published contract, keyed by its `Contract-Version` value. */
export interface ContractPaths {
  '2026-09-21': Current.paths;
  '2026-08-25': Archived0825.paths;
  '2026-08-19': Archived0819.paths;
}

/** The `components` of each published contract. */
export interface ContractComponents {
  '2026-09-21': Current.components;
  '2026-08-25': Archived0825.components;
  '2026-08-19': Archived0819.components;
}

export type ContractVersion = keyof ContractPaths;

// A contract added to redocly.yaml and generated must be added to the maps above too: until it is,
// this line does not compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type MustHold<T extends true> = T;
export type ContractMapsCoverGeneratedVersions = MustHold<Same<ContractVersion, GeneratedContractVersion>>;

export type DashboardPaths = Dashboard.paths;
export type DashboardComponents = Dashboard.components;

/** The envelope of one contract (the same shape in every contract and the dashboard API). */
export type ContractProblem<V extends ContractVersion = '2026-09-21'> = ContractComponents[V]['schemas']['Problem'];
export type DashboardProblem = Dashboard.components['schemas']['Problem'];

type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';
type MediaType = `${string}/${string}`;
type PathsWithMethod<Paths, M extends HttpMethod> = {
  [P in keyof Paths]: Paths[P] extends { [K in M]: any } ? P : never;
}[keyof Paths];

type RequiredKeysOfHelper<T> = { [K in keyof T]: {} extends Pick<T, K> ? never : K }[keyof T];
type RequiredKeysOf<T> = RequiredKeysOfHelper<T> extends undefined ? never : RequiredKeysOfHelper<T>;
type InitParam<Init> =
  RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

/**
 * openapi-fetch's `{data, error, response}` with `error` replaced by the envelope. The success
 * branch is kept as openapi-fetch infers it (`data` is `undefined` for a 204).
 */
export type ProblemResponse<R, P> = R extends { error: unknown } ? { data?: never; error: P; response: Response } : R;

type OperationOf<Item, M extends HttpMethod> =
  Item extends { [K in M]: infer Operation extends Record<string | number, any> } ? Operation : never;

type ProblemMethod<Paths, M extends HttpMethod, P> = <
  Path extends PathsWithMethod<Paths, M>,
  Init extends MaybeOptionalInit<Paths[Path], M & keyof Paths[Path]>,
>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<ProblemResponse<FetchResponse<OperationOf<Paths[Path], M>, Init, MediaType>, P>>;

/** An openapi-fetch client whose `error` is always the envelope `P`. */
export interface ProblemClient<Paths extends {}, P> {
  GET: ProblemMethod<Paths, 'get', P>;
  PUT: ProblemMethod<Paths, 'put', P>;
  POST: ProblemMethod<Paths, 'post', P>;
  PATCH: ProblemMethod<Paths, 'patch', P>;
  DELETE: ProblemMethod<Paths, 'delete', P>;
  HEAD: ProblemMethod<Paths, 'head', P>;
  OPTIONS: ProblemMethod<Paths, 'options', P>;
  /** Register middleware (openapi-fetch's). */
  use(...middleware: Middleware[]): void;
  /** Unregister middleware. */
  eject(...middleware: Middleware[]): void;
  /** The untyped-error openapi-fetch client underneath, for what this interface does not cover. */
  readonly raw: Client<Paths>;
}

export type ContractClient<V extends ContractVersion = '2026-09-21'> = ProblemClient<ContractPaths[V], ContractProblem<V>>;
export type DashboardClient = ProblemClient<DashboardPaths, DashboardProblem>;

/**
 * The `Authorization: Bearer` token of every call (one name across the kit, decision KIT-03): a string, or a
 * function that yields the current one before each request.
 */
export type BearerToken = string | (() => string | Promise<string>);

interface CommonClientOptions {
  /**
   * The service's origin, for example `https://tis.example.edu` or a Prism mock's
   * `http://127.0.0.1:4010`. The paths already begin with `/v1` (decision L-01).
   */
  baseUrl: string;
  /** Replaces `globalThis.fetch` (tests, proxies, instrumentation). */
  fetch?: (input: Request) => Promise<Response>;
  /** Extra headers sent on every request (for example `Prefer` for a Prism mock). */
  headers?: Record<string, string>;
}

export interface ContractClientOptions<V extends ContractVersion> extends CommonClientOptions {
  /** Sent as `Contract-Version` on every request (decision NS-18). */
  version: V;
  /**
   * `Authorization: Bearer` token: the tool's API key (score URLs) or a launch's
   * `api.token` (scores, storage, files, provision). Omit it for the operations that need none.
   */
  token?: BearerToken;
}

export interface DashboardClientOptions extends CommonClientOptions {
  /** A platform token, builder token or Sandbox LMS access token (decision S-07). */
  token?: BearerToken;
}
