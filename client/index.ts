// Typed clients for the published contracts and the dashboard API, on openapi-fetch and the types
// generated from the specs (`npm run generate`). Each client sends the contract it is typed for in
// `Contract-Version` (decision NS-18) and its `token` as `Authorization: Bearer`, and returns
// openapi-fetch's `{data, error, response}` with `error` always the service's envelope.

import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type {
  ContractClient,
  ContractClientOptions,
  ContractVersion,
  BearerToken,
  DashboardClient,
  DashboardClientOptions,
  ProblemClient,
} from './client-types.js';
import { withProblemBody } from './problem.js';
import { contractVersions, currentContractVersion } from '../generated/index.js';

export type * from './client-types.js';
export type { Problem } from './problem.js';
export { isProblem, problemFromBody, readProblem, PROBLEM_CONTENT_TYPE, UNEXPECTED_RESPONSE_CODE } from './problem.js';

/** The published contracts, current first (the values `Contract-Version` accepts), as generated from redocly.yaml. */
export const CONTRACT_VERSIONS: readonly ContractVersion[] = contractVersions;
export const CURRENT_CONTRACT_VERSION = currentContractVersion;

function originOf(baseUrl: string): string {
  // openapi-fetch joins baseUrl and path with a slash; a trailing one would double it.
  return baseUrl.replace(/\/+$/, '');
}

function bearerMiddleware(token: BearerToken | undefined): Middleware[] {
  const problems: Middleware = {
    async onResponse({ response }) {
      return response.status >= 400 ? withProblemBody(response) : undefined;
    },
  };
  if (token === undefined) return [problems];
  const bearer: Middleware = {
    async onRequest({ request }) {
      const value = typeof token === 'function' ? await token() : token;
      request.headers.set('Authorization', `Bearer ${value}`);
      return request;
    },
  };
  return [bearer, problems];
}

function wrap<Paths extends {}, P>(raw: Client<Paths>): ProblemClient<Paths, P> {
  return {
    GET: raw.GET,
    PUT: raw.PUT,
    POST: raw.POST,
    PATCH: raw.PATCH,
    DELETE: raw.DELETE,
    HEAD: raw.HEAD,
    OPTIONS: raw.OPTIONS,
    use: (...middleware: Middleware[]) => raw.use(...middleware),
    eject: (...middleware: Middleware[]) => raw.eject(...middleware),
    raw,
  } as unknown as ProblemClient<Paths, P>;
}

/**
 * A client for one published contract, typed from that contract's spec.
 *
 * ```ts
 * const tis = createContractClient({ version: '2026-09-21', baseUrl: 'https://tis.example.edu', token: apiToken });
 * const { data, error } = await tis.GET('/v1/contexts/{context_id}/apps/{app_id}/storage', {
 *   params: { path: { context_id, app_id } },
 * });
 * if (error) console.error(error.status, error.code, error.detail);
 * ```
 *
 * Launch claims carry ready-made URLs; for those, the helpers of `./tool` call them as given.
 */
export function createContractClient<V extends ContractVersion>(options: ContractClientOptions<V>): ContractClient<V> {
  if (!(CONTRACT_VERSIONS as readonly string[]).includes(options.version)) {
    throw new RangeError(`unknown contract version "${String(options.version)}"; served versions: ${CONTRACT_VERSIONS.join(', ')}`);
  }
  const raw = createClient({
    baseUrl: originOf(options.baseUrl),
    headers: { ...options.headers, 'Contract-Version': options.version },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  raw.use(...bearerMiddleware(options.token));
  return wrap(raw);
}

/**
 * A client for this implementation's dashboard API (`/dashboard/v1/...`, decision L-08), which is
 * not part of the published contract and so sends no `Contract-Version`.
 */
export function createDashboardClient(options: DashboardClientOptions): DashboardClient {
  const raw = createClient({
    baseUrl: originOf(options.baseUrl),
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  raw.use(...bearerMiddleware(options.token));
  return wrap(raw);
}
