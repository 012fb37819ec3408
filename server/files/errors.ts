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

/**
 * The object store (`BLOB_STORE=s3`) could not be reached or failed while listing, signing, reading or
 * writing (decision OBJ-10). Not the caller's fault and likely passing: the HTTP layer answers 503
 * `object_store_unavailable` with `Retry-After`, the shape of `store_busy` (S-33). `cause` keeps the SDK's
 * error for the log.
 */
export class ObjectStoreUnavailableError extends Error {
  readonly code = 'object_store_unavailable';
  constructor(
    readonly operation: string,
    options?: { cause?: unknown },
  ) {
    super(`the object store failed to ${operation}${causeText(options?.cause)}`, options);
    this.name = 'ObjectStoreUnavailableError';
  }
}

function causeText(cause: unknown): string {
  if (cause instanceof Error && cause.message) return `: ${cause.message}`;
  return '';
}
