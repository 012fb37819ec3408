/**
 * The picker: the locations request to the tool (contract, Locations URL) and what the instructor sees.
 *
 * `requestLocations` sends the signed locations request and reads the answer under the contract's
 * rules, mapping every row of its failure table to the exact message (decisions S-05, GAP-26, GAP-27).
 * `openPicker` adds what opening the picker records: the service's locations for the extids served
 * (bound for good on first sight), the locations no longer served hidden, and the answer kept as the
 * course's last picker answer, from which placements are made (decision S-09).
 *
 * Contract rules 2, 4, 5 and 6 of the locations response, read together: an extid names one location of
 * the service forever (2); dropping it only hides the location from the picker, and its placements keep
 * launching (4); serving new content under a known extid updates that one location record, so every
 * placement of it now leads to what the tool serves under the extid, with no error (5); and each
 * placement keeps the copy of the entry taken when it was placed, which its launches carry (6). So a
 * retarget changes the location record (the next picker shows it, the next placement copies it) and
 * never the copies already stored.
 *
 * Where the entries come from depends on the tool's pin (decisions S-16, S-41): a tool pinned to
 * 2026-08-19 (which has no locations request, S-40), or a hosted tool pinned to 2026-08-25, is offered its
 * stored locations (the archived management API's), in that contract's list order, with no request sent.
 */
import type { components } from '../../generated/dashboard/types.js';
import type { ContractVersion, LocationsFailureCode, PickerGroup, PickerLocation, PickerTree } from '../../rules/locations.js';
import { CONTRACT_VERSIONS, LOCATIONS_FAILURE_MESSAGES, LOCATIONS_LIMITS, normalizeLocationsResponse } from '../../rules/locations.js';
import { reduceToPlainText } from '../../rules/plain-text.js';
import { storedLocations } from './stored-order.js';
import type { Services } from '../http/services.js';
import { pinHasRequest } from '../launches/service.js';
import { LOCATIONS_MAX_BODY_BYTES } from '../outbound/index.js';
import type { ToolOutcome } from '../outbound/index.js';
import type { AppRecord, ContextRecord, LocationRecord, ServedLocationEntry } from '../store/index.js';
import { isoFromMs } from '../store/index.js';
import { assertAvailable } from './availability.js';
import { launchServiceCall, PlacementError } from './errors.js';

export type Picker = components['schemas']['Picker'];
export type PickerGroupJson = components['schemas']['PickerGroup'];
export type PickerLocationJson = components['schemas']['Location'];

/** The instructor-facing texts of the contract's table of locations request failures. */
export const LOCATIONS_MESSAGES = {
  no_locations_url: 'App does not have a locations_url configured',
  locations_timeout: 'app connection timeout',
  locations_connection_failure: 'app connection failure',
  locations_http_error: 'app failed to provide the available locations',
  locations_redirect: 'the app redirected the locations request; locations_url must name the endpoint itself',
  locations_invalid_json: LOCATIONS_FAILURE_MESSAGES.invalid_json,
  locations_invalid_structure: LOCATIONS_FAILURE_MESSAGES.invalid_structure,
  locations_too_deep: LOCATIONS_FAILURE_MESSAGES.nesting_too_deep,
  locations_empty_group_label: LOCATIONS_FAILURE_MESSAGES.empty_group_label,
} as const;

export type LocationsFailureKind = keyof typeof LOCATIONS_MESSAGES;

export interface LocationsFailure {
  code: LocationsFailureKind;
  /** 409 for a tool with no locations URL (nothing was asked); 502 when the tool failed. */
  status: 409 | 502;
  /** Exactly what the instructor sees, with the S-05 suffix where the table asks for one. */
  detail: string;
  /** What happened, for the logs (never shown to the instructor beyond `detail`). */
  reason: string | null;
}

export type LocationsAnswer =
  | { ok: true; tree: PickerTree; fetchedAt: number }
  | { ok: false; failure: LocationsFailure };

/** A failed locations request, thrown by `openPicker`: the instructor places nothing. */
export class LocationsRequestError extends PlacementError {
  constructor(readonly failure: LocationsFailure) {
    super(failure.status, failure.code, failure.detail, failure.reason);
    this.name = 'LocationsRequestError';
  }
}

const RULES_CODES: Readonly<Record<LocationsFailureCode, LocationsFailureKind>> = {
  invalid_json: 'locations_invalid_json',
  invalid_structure: 'locations_invalid_structure',
  nesting_too_deep: 'locations_too_deep',
  empty_group_label: 'locations_empty_group_label',
};

function failed(code: LocationsFailureKind, suffix: string | null, reason: string | null = null): LocationsAnswer {
  const message = LOCATIONS_MESSAGES[code];
  return {
    ok: false,
    failure: {
      code,
      status: code === 'no_locations_url' ? 409 : 502,
      detail: suffix === null ? message : `${message}${suffix}`,
      reason,
    },
  };
}

function contractOf(app: AppRecord): ContractVersion {
  return (CONTRACT_VERSIONS as readonly string[]).includes(app.contractVersion)
    ? (app.contractVersion as ContractVersion)
    : '2026-09-21';
}

/** Reads the tool's answer: the contract's table, row by row. */
export function readLocationsOutcome(outcome: ToolOutcome, app: AppRecord, fetchedAt: number): LocationsAnswer {
  switch (outcome.kind) {
    case 'rule_failure':
      // GAP-26: the URL rules are checked again at call time; the detail names the rule.
      return failed('locations_connection_failure', `: ${outcome.message}`, `rule ${outcome.rule}`);
    case 'timeout':
      return failed('locations_timeout', null, `no complete answer within ${outcome.timeoutMs} ms`);
    case 'connection_failure':
      return failed('locations_connection_failure', null, `${outcome.reason}${outcome.code ? ` (${outcome.code})` : ''}: ${outcome.message}`);
    case 'redirect':
      return failed('locations_redirect', null, `HTTP ${outcome.status} to ${outcome.location ?? '(no Location header)'}`);
    case 'too_large':
      if (outcome.status < 200 || outcome.status > 299) return failed('locations_http_error', ` (HTTP ${outcome.status})`);
      return failed(
        'locations_invalid_structure',
        `: the response body is larger than ${outcome.limitBytes} bytes`,
        'body over the size limit',
      );
    case 'response': {
      if (outcome.status < 200 || outcome.status > 299) {
        return failed('locations_http_error', ` (HTTP ${outcome.status})`);
      }
      // GAP-27: any 2xx is read as JSON whatever its Content-Type; S-05: no body is invalid JSON.
      const result = normalizeLocationsResponse(outcome.body.length === 0 ? undefined : new Uint8Array(outcome.body), {
        contractVersion: contractOf(app),
      });
      if (result.ok) return { ok: true, tree: result.tree, fetchedAt };
      const code = RULES_CODES[result.code];
      return code === 'locations_invalid_structure'
        ? failed(code, `: ${result.detail}`, result.detail)
        : failed(code, null, result.detail);
    }
  }
}

export interface LocationsRequestInput {
  appId: string;
  contextId: string;
  /** The instructor opening the picker, when known (every `user` claim is null otherwise). */
  memberId?: string | null;
}

async function loadAppAndContext(services: Services, appId: string, contextId: string): Promise<{ app: AppRecord; context: ContextRecord }> {
  const app = await services.store.apps.get(appId);
  if (!app) throw new PlacementError(404, 'app_not_found', `no tool ${appId}`);
  const context = await services.store.contexts.get(contextId);
  if (!context) throw new PlacementError(404, 'context_not_found', `tool ${appId} has no course ${contextId}`);
  return { app, context };
}

/**
 * Sends the locations request and reads the answer; records nothing. Refuses (as `PlacementError`) a tool
 * that may not be asked in this course (GAP-25); every failure of the tool is an answer, not a throw.
 */
export async function requestLocations(services: Services, input: LocationsRequestInput): Promise<LocationsAnswer> {
  const { app, context } = await loadAppAndContext(services, input.appId, input.contextId);
  assertAvailable(app, context);
  if (app.locationsUrl === null || app.locationsUrl.trim() === '') return failed('no_locations_url', null);
  const request = await launchServiceCall(() =>
    services.launches.locationsRequest({
      appId: app.id,
      contextId: context.id,
      memberId: input.memberId ?? null,
    }),
  );
  const outcome = await services.outbound.postForm({
    url: app.locationsUrl,
    field: 'locations_url',
    form: { launch_data: request.token },
    timeoutMs: services.config.locationsTimeoutMs,
    maxBodyBytes: LOCATIONS_MAX_BODY_BYTES,
    accept: 'application/json',
  });
  return readLocationsOutcome(outcome, app, services.clock.nowMs());
}

/** Every entry in the order the picker shows it: locations before groups, depth first. */
export function flattenTree(tree: { locations: readonly PickerLocation[]; groups: readonly PickerGroup[] }): PickerLocation[] {
  const out: PickerLocation[] = [...tree.locations];
  for (const group of tree.groups) out.push(...flattenTree(group));
  return out;
}

function locationJson(entry: PickerLocation, record: LocationRecord): PickerLocationJson {
  return {
    id: record.id,
    extid: entry.extid,
    type: entry.type,
    label: entry.label,
    description: entry.description ?? null,
    points: entry.type === 'assessment' ? (entry.points ?? 100) : null,
  };
}

function groupJson(group: PickerGroup, ids: ReadonlyMap<string, LocationRecord>): PickerGroupJson {
  return {
    label: group.label,
    description: group.description ?? null,
    // The checkbox takes or releases the subtree: an extid shown twice in it counts once (S-09).
    count: new Set(flattenTree(group).map((l) => l.extid)).size,
    locations: group.locations.map((l) => locationJson(l, ids.get(l.extid) as LocationRecord)),
    groups: group.groups.map((g) => groupJson(g, ids)),
  };
}

/** The picker as the instructor sees it, with the service's location IDs. */
export function pickerJson(contextId: string, tree: PickerTree, fetchedAt: number, ids: ReadonlyMap<string, LocationRecord>): Picker {
  return {
    context_id: contextId,
    fetched: isoFromMs(fetchedAt),
    message: tree.message,
    locations: tree.locations.map((l) => locationJson(l, ids.get(l.extid) as LocationRecord)),
    groups: tree.groups.map((g) => groupJson(g, ids)),
  };
}

/**
 * Opens the picker in a course: the locations request, then the service's record of it. Throws
 * `LocationsRequestError` (502, or 409 without a locations URL) with the instructor's message, and
 * `PlacementError` when the tool may not be asked here. A failed request also forgets the course's last
 * picker answer: every failure ends with the instructor placing nothing. A tool whose pin offers stored
 * locations (`pickerSource`) is asked nothing, so only its availability can refuse.
 */
export async function openPicker(services: Services, input: LocationsRequestInput): Promise<Picker> {
  const { app, context } = await loadAppAndContext(services, input.appId, input.contextId);
  if (pickerSource(app) === 'stored') return openStoredPicker(services, app, context);
  const answer = await requestLocations(services, input);
  if (!answer.ok) {
    services.log.info('locations request failed', {
      app: input.appId,
      context: input.contextId,
      code: answer.failure.code,
      reason: answer.failure.reason,
    });
    // The instructor places nothing after a failed picker (contract), so no older answer stays placeable.
    await services.store.pickerAnswers.delete(input.appId, input.contextId);
    throw new LocationsRequestError(answer.failure);
  }
  const entries: ServedLocationEntry[] = flattenTree(answer.tree).map((l) => ({
    extid: l.extid,
    type: l.type,
    label: l.label,
    description: l.description ?? null,
    points: l.points ?? null,
  }));
  const records = await services.store.locations.syncServed(input.appId, entries);
  const ids = new Map(records.map((r) => [r.extid as string, r]));
  const picker = pickerJson(input.contextId, answer.tree, answer.fetchedAt, ids);
  await services.store.pickerAnswers.put({
    appId: input.appId,
    contextId: input.contextId,
    answer: JSON.stringify(picker),
    fetchedAt: answer.fetchedAt,
  });
  return picker;
}

/** Where a tool's picker entries come from: its locations URL, or its stored locations (S-16, S-41). */
export type PickerSource = 'served' | 'stored';

export function pickerSource(app: AppRecord): PickerSource {
  if (!pinHasRequest(app.contractVersion, 'locations')) return 'stored';
  if (app.contractVersion !== '2026-08-25') return 'served';
  // 2026-08-25: "an empty string clears [locations_url], which leaves only locations stored in the service
  // on offer" (H-09); hosted tools are always offered their stored locations (S-16).
  const noLocationsUrl = app.locationsUrl === null || app.locationsUrl.trim() === '';
  return app.hosting === 'hosted' || noLocationsUrl ? 'stored' : 'served';
}

/**
 * A stored location as a picker entry. The entry's key is its extid, or its ID for a 2026-08-19 location,
 * which has none (as 2026-08-25 and the launches show it, S-38); a label blank after reduction shows that
 * key, since an entry cannot be offered without a label (S-41).
 */
export function storedEntry(location: LocationRecord): PickerLocation {
  const extid = location.extid ?? location.id;
  const label = reduceToPlainText(location.label, LOCATIONS_LIMITS.labelLength);
  const description = location.description === null ? '' : reduceToPlainText(location.description, LOCATIONS_LIMITS.descriptionLength);
  return {
    extid,
    type: location.type,
    label: label === '' ? extid : label,
    ...(description !== '' ? { description } : {}),
    ...(location.type === 'assessment' ? { points: location.points ?? LOCATIONS_LIMITS.defaultPoints } : {}),
  };
}

/**
 * The picker from stored locations: nothing is asked of the tool, so nothing can fail but availability;
 * the answer is kept like a served one, and placements copy from it.
 */
async function openStoredPicker(services: Services, app: AppRecord, context: ContextRecord): Promise<Picker> {
  assertAvailable(app, context);
  const stored = await storedLocations(services, app.id, app.contractVersion === '2026-08-25' ? '2026-08-25' : '2026-08-19');
  const entries = stored.map(storedEntry);
  const ids = new Map(stored.map((record, i) => [(entries[i] as PickerLocation).extid, record]));
  const fetchedAt = services.clock.nowMs();
  const picker = pickerJson(context.id, { message: null, locations: entries, groups: [] }, fetchedAt, ids);
  await services.store.pickerAnswers.put({ appId: app.id, contextId: context.id, answer: JSON.stringify(picker), fetchedAt });
  return picker;
}

/** The course's last picker answer, or null when the picker has not been opened there (since a reset). */
export async function lastPickerAnswer(services: Pick<Services, 'store'>, appId: string, contextId: string): Promise<Picker | null> {
  const record = await services.store.pickerAnswers.get(appId, contextId);
  return record ? (JSON.parse(record.answer) as Picker) : null;
}

/** The first entry of `extid` in the order the picker shows it (an extid shown twice is one location). */
export function findOffered(picker: Picker, extid: string): PickerLocationJson | null {
  const walk = (node: { locations: PickerLocationJson[]; groups: PickerGroupJson[] }): PickerLocationJson | null => {
    const here = node.locations.find((l) => l.extid === extid);
    if (here) return here;
    for (const group of node.groups) {
      const found = walk(group);
      if (found) return found;
    }
    return null;
  };
  return walk(picker);
}
