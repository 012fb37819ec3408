/**
 * A refusal of the files layer, with the contract's status, code and exact message. The HTTP layer
 * turns it into a `Problem`; `server/files` stays free of HTTP types so it can run behind any transport.
 */
export class FilesError extends Error {
  constructor(
    readonly status: 403 | 404 | 413 | 415 | 422,
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'FilesError';
  }
}
