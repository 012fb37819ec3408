// A tool's three endpoints as an Express router: each verifies the form field `launch_data` and
// hands the typed claims to the tool's own code. Mount it where the callback, provision and
// locations URLs point, e.g. `app.use('/tis', toolEndpoints(...))` for `https://tool.example/tis/launch`.

import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { normalizeLocationsResponse, LocationsResponseBuilder, LocationsResponseError, type LocationsResponseJson } from '../../rules/locations.js';
import type { ContractVersion } from '../client-types.js';
import { PROBLEM_CONTENT_TYPE, reasonPhrase, type Problem } from '../problem.js';
import type {
  LaunchClaims,
  LocationsClaims,
  ProvisionClaims,
  ProvisioningVersion,
  TokenError,
  TokenKind,
  TokenVerifier,
  VerifyResult,
} from './verifier.js';

/**
 * The tool's code for one request. It may answer through `res` itself; when it does not:
 * a launch or provision request is answered 204, and a locations request with the value returned.
 */
export type ToolHandler<C, R = unknown> = (claims: C, req: Request, res: Response) => R | Promise<R>;

/** What `onLocations` returns: the shared builder (`locationsResponse()`) or the response as a plain object. */
export type LocationsAnswer = LocationsResponseBuilder | LocationsResponseJson;

type ProvisioningHandlers<V extends ContractVersion> = V extends ProvisioningVersion
  ? {
      /** Answer promptly (204 when `res` is left alone), then PUT the `provision` URLs when ready. */
      onProvision?: ToolHandler<ProvisionClaims<V>>;
      /** Returns the picker's contents; the router answers 200 with it as JSON, keeping key order. */
      onLocations?: ToolHandler<LocationsClaims<V>, LocationsAnswer>;
    }
  : { onProvision?: never; onLocations?: never };

export type ToolEndpointsOptions<V extends ContractVersion = '2026-09-21'> = {
  verifier: TokenVerifier<V>;
  /** The user's browser arrives here; render or redirect through `res`. */
  onLaunch?: ToolHandler<LaunchClaims<V>>;
  /**
   * Answers a refused token. By default: `error.status` (401, or 503 when the service's keys
   * could not be fetched) with a problem body whose `code` is the refusal's.
   */
  onRefused?: (error: TokenError, kind: TokenKind, req: Request, res: Response) => void | Promise<void>;
} & ProvisioningHandlers<V>;

function refusalBody(error: TokenError): Problem {
  return { type: 'about:blank', title: reasonPhrase(error.status), status: error.status, detail: error.message, code: error.code };
}

function sendRefusal(error: TokenError, _kind: TokenKind, _req: Request, res: Response): void {
  res.status(error.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(refusalBody(error)));
}

/** The locations answer as JSON text, refused here exactly as the service would refuse it. */
function locationsText(answer: unknown, contractVersion: ContractVersion): string {
  if (answer instanceof LocationsResponseBuilder) return answer.toJSONText();
  const result = normalizeLocationsResponse(answer, { contractVersion });
  if (!result.ok) {
    throw new LocationsResponseError(
      result.code,
      result.detail,
      result.path,
      `the service would refuse this locations response: ${result.message} (${result.detail})`,
    );
  }
  return JSON.stringify(answer);
}

/**
 * `POST /launch`, `POST /provision` and `POST /locations` (each only when its handler is given),
 * reading the `application/x-www-form-urlencoded` field `launch_data`.
 */
export function toolEndpoints<V extends ContractVersion = '2026-09-21'>(options: ToolEndpointsOptions<V>): Router {
  const { verifier } = options;
  const router = express.Router();
  // The forms carry one JWT; a few kilobytes is plenty and bounds what a stranger can post.
  const form = express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 10 });
  const refuse = options.onRefused ?? sendRefusal;

  // Typed at the edges (the options); inside, claims are passed through untouched.
  type AnyHandler = ToolHandler<any, unknown>;
  function route(
    path: string,
    kind: TokenKind,
    verify: (token: unknown) => Promise<VerifyResult<unknown>>,
    handle: (claims: unknown, req: Request, res: Response) => Promise<void>,
  ): void {
    router.post(path, form, async (req: Request, res: Response, next: NextFunction) => {
      const body: unknown = req.body;
      const token = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).launch_data : undefined;
      const result = await verify(token);
      if (result.error) {
        await refuse(result.error, kind, req, res);
        return;
      }
      try {
        await handle(result.claims, req, res);
      } catch (error) {
        next(error);
      }
    });
  }

  const answeredOr204 = async (handler: AnyHandler, claims: unknown, req: Request, res: Response) => {
    await handler(claims, req, res);
    if (!res.headersSent) res.status(204).end();
  };

  if (options.onLaunch) {
    const onLaunch = options.onLaunch as AnyHandler;
    route('/launch', 'launch', (token) => verifier.verifyLaunch(token), (claims, req, res) => answeredOr204(onLaunch, claims, req, res));
  }
  const provisioning = verifier as unknown as {
    verifyProvision?: (token: unknown) => Promise<VerifyResult<unknown>>;
    verifyLocations?: (token: unknown) => Promise<VerifyResult<unknown>>;
  };
  const handlers = options as unknown as { onProvision?: AnyHandler; onLocations?: AnyHandler };
  if (handlers.onProvision || handlers.onLocations) {
    if (!provisioning.verifyProvision || !provisioning.verifyLocations) {
      throw new TypeError(`contract ${verifier.contractVersion} sends no provision or locations requests`);
    }
  }
  if (handlers.onProvision && provisioning.verifyProvision) {
    const onProvision = handlers.onProvision;
    route('/provision', 'provision', provisioning.verifyProvision, (claims, req, res) => answeredOr204(onProvision, claims, req, res));
  }
  if (handlers.onLocations && provisioning.verifyLocations) {
    const onLocations = handlers.onLocations;
    route('/locations', 'locations', provisioning.verifyLocations, async (claims, req, res) => {
      const answer = await onLocations(claims, req, res);
      if (res.headersSent) return;
      if (answer === undefined) throw new TypeError('onLocations returned nothing; return a locationsResponse() builder or the response object');
      res.status(200).type('application/json').send(locationsText(answer, verifier.contractVersion));
    });
  }
  return router;
}
