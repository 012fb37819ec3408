/**
 * What the placement services refuse, with the HTTP answer each refusal deserves. The services know
 * nothing of HTTP; a handler turns a refusal into the problem envelope with `toProblem()`.
 */
import { Problem } from '../http/problem.js';
import { UnsupportedContractError } from '../launches/claims.js';
import { LaunchError } from '../launches/service.js';

export type PlacementErrorStatus = 403 | 404 | 409 | 422 | 502;

export class PlacementError extends Error {
  constructor(
    readonly status: PlacementErrorStatus,
    readonly code: string,
    /** The exact message for `detail`. */
    readonly detail: string,
    /** For the logs and the builder: why, beyond what the message says. */
    readonly reason: string | null = null,
  ) {
    super(detail);
    this.name = 'PlacementError';
  }

  toProblem(): Problem {
    return new Problem(this.status, this.code, this.detail);
  }
}

/**
 * A launch service refusal met on the way (a record gone since it was read, a member not in the course,
 * a pin whose contract lacks the request) as the refusal a handler answers; null for anything else.
 * The services catch these so that no path through them ends in a 500.
 */
export function placementErrorOf(err: unknown): PlacementError | null {
  if (err instanceof PlacementError) return err;
  if (err instanceof UnsupportedContractError) {
    return new PlacementError(409, 'contract_not_served', err.message, err.name);
  }
  if (!(err instanceof LaunchError)) return null;
  switch (err.reason) {
    case 'unknown_app':
      return new PlacementError(404, 'app_not_found', err.message);
    case 'unknown_context':
      return new PlacementError(404, 'context_not_found', err.message);
    case 'unknown_location':
      return new PlacementError(404, 'location_not_found', err.message);
    case 'unknown_member':
      return new PlacementError(422, 'member_not_in_context', err.message);
    case 'resource_link_taken':
      return new PlacementError(409, 'resource_link_taken', err.message);
    case 'location_deleted':
      return new PlacementError(409, 'location_deleted', err.message);
  }
}

/** Runs a call into the launch service, turning its refusals into `PlacementError`s. */
export async function launchServiceCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw placementErrorOf(err) ?? err;
  }
}
