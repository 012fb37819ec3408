// The tool side of the kit: what a tool's server needs to receive the service's requests and to
// call the URLs they carry. Everything here works on the URLs exactly as the claims give them.

export {
  createTokenVerifier,
  TokenError,
  type JwksOptions,
  type LaunchClaims,
  type LocationsClaims,
  type ProvisionClaims,
  type ProvisioningVersion,
  type TokenErrorCode,
  type TokenKind,
  type TokenVerifier,
  type TokenVerifierOptions,
  type VerifyResult,
} from './verifier.js';
export { MemoryReplayCache, type MemoryReplayCacheOptions, type ReplayStore } from './replay-cache.js';
export { rows, type Row, type RowClient, type PatchOperation, type JsonValue, type JsonObject, type JsonArray } from './rows.js';
export {
  files,
  FILE_KEY_MESSAGE,
  FILE_KEY_PATTERN,
  MAX_FILE_SIZE,
  type FileDetail,
  type FileList,
  type FilesClient,
  type FileSummary,
  type Uploaded,
  type UploadData,
  type UploadForm,
  type UploadOptions,
} from './files.js';
export {
  markProvisioned,
  submitScore,
  type GradeAttempt,
  type ScoreSubmission,
  type ScoreSubmissionResult,
  type SkippedSubmission,
} from './scores.js';
export type { ToolRequestOptions, ToolResult } from './http.js';
export type { ContractVersion } from '../client-types.js';
export type { Problem } from '../problem.js';

// The locations response builder is the service's own rules module, not a copy: a response the
// builder accepts is one the service accepts (rules/locations.ts).
export {
  locationsResponse,
  normalizeLocationsResponse,
  LocationsResponseBuilder,
  LocationGroupBuilder,
  LocationsResponseError,
  LOCATION_TYPES,
  LOCATIONS_LIMITS,
  LOCATIONS_FAILURE_MESSAGES,
  EXTID_PATTERN,
  type LocationEntryInput,
  type LocationEntryJson,
  type LocationGroupJson,
  type LocationsResponseJson,
  type LocationType,
  type PickerGroup,
  type PickerLocation,
  type PickerTree,
  type LocationsResult,
  type LocationsFailure,
} from '../../rules/locations.js';
