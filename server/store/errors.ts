/**
 * Typed errors of the store. The HTTP layer maps them to the contract's messages; the store never
 * formats a contract message itself because the wording differs per contract version.
 */
export class StoreError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Misuse of transactions that would otherwise deadlock or silently run outside the transaction. */
export class TransactionMisuseError extends StoreError {
  constructor(message: string) {
    super('transaction_misuse', message);
  }
}

/** The database stayed locked by another connection for longer than the busy timeout. */
export class StoreBusyError extends StoreError {
  constructor(message = 'the database is locked by another connection', options?: { cause?: unknown }) {
    super('store_busy', message, options);
  }
}

export class StoreClosedError extends StoreError {
  constructor() {
    super('store_closed', 'the store is closed');
  }
}

/** A UNIQUE or PRIMARY KEY constraint refused a write; `constraint` names the index or columns when known. */
export class UniqueViolationError extends StoreError {
  readonly constraint: string;
  constructor(constraint: string, options?: { cause?: unknown }) {
    super('unique_violation', `unique constraint violated: ${constraint}`, options);
    this.constraint = constraint;
  }
}

/**
 * A text value holds U+0000, which PostgreSQL's TEXT cannot store (nor compare). Refused before the
 * statement runs, on both stores alike, so the two answer the same; `parameter` is its 1-based position.
 */
export class UnstorableTextError extends StoreError {
  readonly parameter: number;
  constructor(parameter: number) {
    super('unstorable_text', `SQL parameter ${parameter} holds the NUL character (U+0000), which text cannot store`);
    this.parameter = parameter;
  }
}

export class ForeignKeyViolationError extends StoreError {
  constructor(options?: { cause?: unknown }) {
    super('foreign_key_violation', 'foreign key constraint violated', options);
  }
}

export class MigrationError extends StoreError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('migration_error', message, options);
  }
}

/** A row write whose compact JSON exceeds the caller's limit; nothing was written. */
export class RowTooLargeError extends StoreError {
  readonly size: number;
  readonly maxBytes: number;
  constructor(size: number, maxBytes: number) {
    super('row_too_large', `row is ${size} bytes of compact JSON; the limit is ${maxBytes}`);
    this.size = size;
    this.maxBytes = maxBytes;
  }
}

/** A row body that is not a JSON object (rows hold exactly one object). */
export class InvalidRowBodyError extends StoreError {
  constructor(message = 'a row holds one JSON object') {
    super('invalid_row_body', message);
  }
}

export type FileQuotaReason = 'file_size' | 'file_count' | 'total_bytes';

/** An upload that would break a row's file quota; nothing was reserved or written. */
export class FileQuotaError extends StoreError {
  readonly reason: FileQuotaReason;
  readonly limit: number;
  /** What the row would hold (files or bytes) if the request were accepted. */
  readonly requested: number;
  constructor(reason: FileQuotaReason, limit: number, requested: number) {
    super('file_quota_exceeded', `file quota exceeded (${reason}): ${requested} > ${limit}`);
    this.reason = reason;
    this.limit = limit;
    this.requested = requested;
  }
}

export type UploadStateProblem = 'unknown' | 'not_pending';

export class UploadNotPendingError extends StoreError {
  readonly problem: UploadStateProblem;
  constructor(problem: UploadStateProblem, id: string) {
    super('upload_not_pending', `upload reservation ${id} is ${problem === 'unknown' ? 'unknown' : 'no longer pending'}`);
    this.problem = problem;
  }
}

/** Archived contracts: another location of the tool already uses this extid (decision GAP-41). */
export class DuplicateExtidError extends StoreError {
  readonly extid: string;
  constructor(extid: string, options?: { cause?: unknown }) {
    super('duplicate_extid', `extid ${extid} is already used`, options);
    this.extid = extid;
  }
}

/** 2026-08-25: the extid of a placed location is permanent (decision GAP-40). */
export class ExtidPermanentError extends StoreError {
  constructor() {
    super('extid_permanent', 'extid is permanent once placed');
  }
}

/** Archived contracts: the Home (default) location cannot be deleted. */
export class DefaultLocationError extends StoreError {
  constructor() {
    super('default_location', 'the home location cannot be deleted');
  }
}

/** An operation that needs an API key on a tool that has none (hosted tools, decision NS-01). */
export class NoApiKeyError extends StoreError {
  constructor(appId: string) {
    super('no_api_key', `tool ${appId} is hosted and has no API key`);
  }
}

/** A pagination cursor this store did not issue. */
export class InvalidCursorError extends StoreError {
  constructor() {
    super('invalid_cursor', 'invalid pagination cursor');
  }
}
