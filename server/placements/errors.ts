/**
 * What the placement services refuse, with the HTTP answer each refusal deserves. The services know
 * nothing of HTTP; a handler turns a refusal into the problem envelope with `toProblem()`.
 */
import { Problem } from '../http/problem.js';

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
