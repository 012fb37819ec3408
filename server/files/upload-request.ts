/**
 * The body of a file PUT (ask to store), checked with the exact messages of decisions GAP-04 and S-01.
 * The key's own rule (GAP-03) is here too, because every file method checks it.
 */
import { schemas } from '../../generated/2026-09-21/schemas.js';
import { fillMessage } from '../../rules/messages.js';
import { FilesError } from './errors.js';

// The limits, fields and messages the spec states, read from generated/ (lockstep, decisions KIT-04, KIT-20).
export const MAX_FILE_BYTES = schemas.FileUploadRequest.properties.size.maximum;

export const FILE_KEY_PATTERN = new RegExp(schemas.FileKey.pattern);
export const FILE_KEY_MESSAGE = schemas.FileKey['x-messages'].pattern;

const { mimetype: MIMETYPE_SCHEMA, filename: FILENAME_SCHEMA } = schemas.FileUploadRequest.properties;
/** The spec's media-type pattern: `type/subtype` with optional parameters; empty means "guess". */
const MEDIA_TYPE = new RegExp(MIMETYPE_SCHEMA.pattern);
const FILENAME = new RegExp(FILENAME_SCHEMA.pattern);

const { size: SIZE_SCHEMA, attachment: ATTACHMENT_SCHEMA } = schemas.FileUploadRequest.properties;

/** A size over `maximum` (the spec's, or a smaller limit a test or deployment gives the transfer). */
export function sizeTooLargeMessage(maximum: number = MAX_FILE_BYTES): string {
  return fillMessage(SIZE_SCHEMA['x-messages'].maximum, { maximum });
}

export const UPLOAD_MESSAGES = {
  sizeRequired: SIZE_SCHEMA['x-messages'].required,
  sizeNotInteger: SIZE_SCHEMA['x-messages'].type,
  sizeTooLarge: sizeTooLargeMessage(),
  mimetype: MIMETYPE_SCHEMA['x-messages'].pattern,
  filename: FILENAME_SCHEMA['x-messages'].pattern,
  attachment: ATTACHMENT_SCHEMA['x-messages'].type,
  unknownField: (name: string) => fillMessage(schemas.FileUploadRequest['x-messages'].additionalProperties, { name }),
} as const;

const FIELDS = new Set(Object.keys(schemas.FileUploadRequest.properties));

export interface UploadRequest {
  size: number;
  /** Empty when the PUT left it to be guessed. */
  mimetype: string;
  /** Empty when the PUT left it to default to the key. */
  filename: string;
  attachment: boolean;
}

export function checkFileKey(key: string): void {
  if (!FILE_KEY_PATTERN.test(key)) throw new FilesError(422, 'invalid_file_key', FILE_KEY_MESSAGE);
}

const invalid = (code: string, detail: string): FilesError => new FilesError(422, code, detail);

/** Unknown fields first (the body's shape), then each field in the table's order. */
export function parseUploadRequest(body: unknown): UploadRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('size_required', UPLOAD_MESSAGES.sizeRequired);
  const record = body as Record<string, unknown>;
  for (const name of Object.keys(record)) {
    if (!FIELDS.has(name)) throw invalid('unknown_field', UPLOAD_MESSAGES.unknownField(name));
  }
  const { size, mimetype, filename, attachment } = record;
  if (size === undefined) throw invalid('size_required', UPLOAD_MESSAGES.sizeRequired);
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw invalid('invalid_size', UPLOAD_MESSAGES.sizeNotInteger);
  }
  if (size > MAX_FILE_BYTES) throw invalid('file_too_large', UPLOAD_MESSAGES.sizeTooLarge);
  if (mimetype !== undefined && (typeof mimetype !== 'string' || mimetype.length > MIMETYPE_SCHEMA.maxLength || !MEDIA_TYPE.test(mimetype))) {
    throw invalid('invalid_mimetype', UPLOAD_MESSAGES.mimetype);
  }
  if (filename !== undefined && (typeof filename !== 'string' || [...filename].length > FILENAME_SCHEMA.maxLength || !FILENAME.test(filename))) {
    throw invalid('invalid_filename', UPLOAD_MESSAGES.filename);
  }
  if (attachment !== undefined && typeof attachment !== 'boolean') throw invalid('invalid_attachment', UPLOAD_MESSAGES.attachment);
  return {
    size,
    mimetype: mimetype ?? '',
    filename: filename ?? '',
    attachment: attachment ?? false,
  };
}
