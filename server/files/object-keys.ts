/**
 * Names of file objects in a bucket (decision OBJ-03). An object's name is the row's files path of the API
 * (L-02), then the file key, then the upload's own blob ID:
 *
 *   contexts/{context}/apps/{app}[/locations/{location}][/members/{member}]/files/{key}/{blob}
 *
 * Every segment is checked here, not only where it came from: IDs and file keys can hold no `/`, and no
 * segment may be `.` or `..`, so no name built for one row can reach into another row's prefix, whatever
 * a caller managed to put in a segment. The last segment is fresh for every upload (OBJ-04).
 */
import type { RowKey } from '../store/index.js';
import { FILE_KEY_PATTERN } from './upload-request.js';

/** The service's IDs (path parameters, decision L-09) and blob IDs. */
const ID_SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;
const BLOB_SEGMENT = /^blb_[a-z2-7]{16,64}$/;

function id(value: string, what: string): string {
  if (!ID_SEGMENT.test(value)) throw new RangeError(`${what} cannot be part of an object name: ${JSON.stringify(value)}`);
  return value;
}

/** The row's prefix, ending in `/files/`: no other row's prefix starts with it. */
export function rowObjectPrefix(row: RowKey): string {
  let path = `contexts/${id(row.contextId, 'context')}/apps/${id(row.appId, 'app')}/`;
  if (row.kind === 'location' || row.kind === 'member_location') path += `locations/${id(row.locationId, 'location')}/`;
  if (row.kind === 'member' || row.kind === 'member_location') path += `members/${id(row.memberId, 'member')}/`;
  return `${path}files/`;
}

/** The prefix of every object ever stored for one key of one row. */
export function keyObjectPrefix(row: RowKey, key: string): string {
  if (!FILE_KEY_PATTERN.test(key) || key === '.' || key === '..') {
    throw new RangeError(`file key cannot be part of an object name: ${JSON.stringify(key)}`);
  }
  return `${rowObjectPrefix(row)}${key}/`;
}

/** The object of one upload (or one migrated blob). */
export function fileObjectName(row: RowKey, key: string, blobId: string): string {
  if (!BLOB_SEGMENT.test(blobId)) throw new RangeError(`not a blob ID: ${JSON.stringify(blobId)}`);
  return `${keyObjectPrefix(row, key)}${blobId}`;
}

const OBJECT_NAME =
  /^contexts\/[A-Za-z0-9_-]{1,64}\/apps\/[A-Za-z0-9_-]{1,64}\/(locations\/[A-Za-z0-9_-]{1,64}\/)?(members\/[A-Za-z0-9_-]{1,64}\/)?files\/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\/blb_[a-z2-7]{16,64}$/;

/** Whether a stored blob ID names a file object (as opposed to an embedded store's `blb_...`). */
export function isFileObjectName(value: string): boolean {
  return OBJECT_NAME.test(value);
}
