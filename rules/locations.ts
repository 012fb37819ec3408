// The locations response: what a tool answers to the locations request and what the picker shows.
// The service normalises a tool's answer here, and the tool-side builder validates with the very
// same function, so a response the builder accepts is one the service accepts.

import { contractVersions } from '../generated/index.js';
import { schemas } from '../generated/2026-09-21/schemas.js';
import { escapeToken } from './json-pointer.js';
import { OrderedObject, parseOrderedJson, stringifyOrdered, toPlain, type OrderedJson } from './ordered-json.js';
import { reduceMessage, reduceToPlainText } from './plain-text.js';

// What the spec states is read from generated/ (lockstep, decision KIT-04).
export const LOCATION_TYPES = schemas.LocationType.enum;
export type LocationType = (typeof LOCATION_TYPES)[number];

export const CONTRACT_VERSIONS = contractVersions;
export type ContractVersion = (typeof CONTRACT_VERSIONS)[number];

// The limits are the spec's `x-limits` (decision KIT-20).
export const LOCATIONS_LIMITS = {
  /** A top-level group is level 1; a deeper one is refused (decision GAP-08). */
  maxGroupLevel: schemas.LocationsResponse['x-limits'].group_levels,
  /** Code points after reduction to plain text (decisions GAP-10, GAP-11). */
  labelLength: schemas.LocationEntry.properties.label['x-limits'].length,
  descriptionLength: schemas.LocationEntry.properties.description['x-limits'].length,
  messageLength: schemas.LocationsResponse.properties.message['x-limits'].length,
  defaultPoints: schemas.LocationEntry.properties.points.default,
} as const;

/** Letters, digits, underscores and dashes, 1 to 128 of them (decision GAP-11): the spec's pattern. */
export const EXTID_PATTERN = new RegExp(schemas.LocationClaim.properties.extid.pattern);

/** The instructor-facing texts of the contract's "Locations request failures" table. */
export const LOCATIONS_FAILURE_MESSAGES = {
  invalid_json: 'the app returned invalid JSON',
  invalid_structure: 'the app returned an invalid locations structure',
  nesting_too_deep: 'the app nested location groups more than 5 levels deep',
  empty_group_label: 'the app returned a location group with an empty label',
} as const;
export type LocationsFailureCode = keyof typeof LOCATIONS_FAILURE_MESSAGES;

export interface PickerLocation {
  readonly extid: string;
  readonly type: LocationType;
  readonly label: string;
  /** Absent when not sent or empty after reduction. */
  readonly description?: string;
  /** Present exactly when `type` is assessment. */
  readonly points?: number;
}

export interface PickerGroup {
  readonly label: string;
  readonly description?: string;
  readonly locations: readonly PickerLocation[];
  readonly groups: readonly PickerGroup[];
}

/** What the picker shows, in the order the tool sent it: locations, then groups, at every level. */
export interface PickerTree {
  readonly locations: readonly PickerLocation[];
  readonly groups: readonly PickerGroup[];
  /** Plain text with line breaks; null when not sent, empty after reduction, or not honoured. */
  readonly message: string | null;
}

export interface LocationsFailure {
  readonly ok: false;
  readonly code: LocationsFailureCode;
  /** Exactly the contract's text, shown to the instructor. */
  readonly message: (typeof LOCATIONS_FAILURE_MESSAGES)[LocationsFailureCode];
  /** Where and why, for the detail the contract asks for and for the tool's builder. */
  readonly detail: string;
  /** JSON Pointer into the response; null when the body is not JSON at all. */
  readonly path: string | null;
}

export type LocationsResult = { readonly ok: true; readonly tree: PickerTree } | LocationsFailure;

export interface NormalizeLocationsOptions {
  /**
   * The contract the tool is pinned to. Under 2026-08-25 (and 2026-08-19) only `locations` is
   * honoured; `message` and `grouped_locations` are ignored like unknown keys (decision GAP-46).
   */
  readonly contractVersion?: ContractVersion;
}

class Refusal {
  constructor(
    readonly code: LocationsFailureCode,
    readonly path: string | null,
    readonly reason: string,
  ) {}
}

function refuse(path: string, reason: string, code: LocationsFailureCode = 'invalid_structure'): never {
  throw new Refusal(code, path, reason);
}

// A node is either the order-keeping parse of the raw text or an already-parsed JavaScript
// value; both are read through these helpers so that one walk serves both.
type ObjectNode = OrderedObject | Record<string, unknown>;

function isObjectNode(value: unknown): value is ObjectNode {
  return value instanceof OrderedObject || (typeof value === 'object' && value !== null && !Array.isArray(value));
}

function memberOf(node: ObjectNode, key: string): unknown {
  if (node instanceof OrderedObject) return node.get(key);
  return Object.prototype.hasOwnProperty.call(node, key) ? node[key] : undefined;
}

function membersOf(node: ObjectNode): ReadonlyArray<readonly [string, unknown]> {
  if (node instanceof OrderedObject) return node.entries();
  return Object.keys(node).map((key) => [key, node[key]] as const);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (isObjectNode(value)) return 'an object';
  return `a ${typeof value}`;
}

function optionalText(node: ObjectNode, key: string, path: string, max: number): string | undefined {
  const value = memberOf(node, key);
  if (value === undefined) return undefined;
  if (typeof value !== 'string') refuse(`${path}/${key}`, `must be a string, not ${kindOf(value)}`);
  const reduced = reduceToPlainText(value, max);
  return reduced === '' ? undefined : reduced;
}

function normalizeEntry(extid: string, entry: unknown, path: string): PickerLocation {
  if (!EXTID_PATTERN.test(extid)) {
    refuse(path, 'extid must be 1 to 128 letters, digits, underscores or dashes');
  }
  if (!isObjectNode(entry)) refuse(path, `must be a location entry object, not ${kindOf(entry)}`);
  const type = memberOf(entry, 'type');
  if (type === undefined) refuse(`${path}/type`, 'is required');
  if (typeof type !== 'string' || !(LOCATION_TYPES as readonly string[]).includes(type)) {
    refuse(`${path}/type`, `must be one of ${LOCATION_TYPES.join(', ')}`);
  }
  const rawLabel = memberOf(entry, 'label');
  if (rawLabel === undefined) refuse(`${path}/label`, 'is required');
  if (typeof rawLabel !== 'string') refuse(`${path}/label`, `must be a string, not ${kindOf(rawLabel)}`);
  const label = reduceToPlainText(rawLabel, LOCATIONS_LIMITS.labelLength);
  if (label === '') refuse(`${path}/label`, 'must not be empty, white space or markup only');
  const description = optionalText(entry, 'description', path, LOCATIONS_LIMITS.descriptionLength);
  let points: number | undefined;
  // Points mean something only for an assessment; for other types the contract ignores them,
  // so they are neither checked nor kept.
  if (type === 'assessment') {
    const raw = memberOf(entry, 'points');
    if (raw === undefined) points = LOCATIONS_LIMITS.defaultPoints;
    else if (typeof raw === 'number' && Number.isFinite(raw) && raw > 0) points = raw;
    else refuse(`${path}/points`, 'must be a number greater than 0');
  }
  return {
    extid,
    type: type as LocationType,
    label,
    ...(description !== undefined ? { description } : {}),
    ...(points !== undefined ? { points } : {}),
  };
}

function normalizeLocationMap(map: unknown, path: string): PickerLocation[] {
  if (!isObjectNode(map)) refuse(path, `must be an object mapping extids to location entries, not ${kindOf(map)}`);
  return membersOf(map).map(([extid, entry]) => normalizeEntry(extid, entry, `${path}/${escapeToken(extid)}`));
}

function normalizeGroups(list: unknown, path: string, level: number): PickerGroup[] {
  if (!Array.isArray(list)) refuse(path, `must be an array of groups, not ${kindOf(list)}`);
  return list.map((group: unknown, index): PickerGroup => {
    const here = `${path}/${index}`;
    if (level > LOCATIONS_LIMITS.maxGroupLevel) {
      refuse(here, `is a group at level ${level}; a top-level group is level 1 and the deepest allowed is level 5`, 'nesting_too_deep');
    }
    if (!isObjectNode(group)) refuse(here, `must be a group object, not ${kindOf(group)}`);
    const rawLabel = memberOf(group, 'label');
    // A missing label reads like an empty one; a label of another type is a shape error (GAP-09).
    if (rawLabel === undefined) refuse(`${here}/label`, 'is missing', 'empty_group_label');
    if (typeof rawLabel !== 'string') refuse(`${here}/label`, `must be a string, not ${kindOf(rawLabel)}`);
    const label = reduceToPlainText(rawLabel, LOCATIONS_LIMITS.labelLength);
    if (label === '') refuse(`${here}/label`, 'is empty, white space or markup only', 'empty_group_label');
    const description = optionalText(group, 'description', here, LOCATIONS_LIMITS.descriptionLength);
    const locations = memberOf(group, 'locations');
    const subgroups = memberOf(group, 'grouped_locations');
    return {
      label,
      ...(description !== undefined ? { description } : {}),
      locations: locations === undefined ? [] : normalizeLocationMap(locations, `${here}/locations`),
      groups: subgroups === undefined ? [] : normalizeGroups(subgroups, `${here}/grouped_locations`, level + 1),
    };
  });
}

function normalizeRoot(root: unknown, version: ContractVersion): PickerTree {
  if (!isObjectNode(root)) refuse('', `the response must be a JSON object, not ${kindOf(root)}`);
  const current = version === '2026-09-21';
  const honoured = current ? ['locations', 'grouped_locations', 'message'] : ['locations'];
  if (!honoured.some((key) => memberOf(root, key) !== undefined)) {
    refuse('', `the response names none of ${honoured.join(', ')}`);
  }
  let message: string | null = null;
  const rawMessage = current ? memberOf(root, 'message') : undefined;
  if (rawMessage !== undefined) {
    if (typeof rawMessage !== 'string') refuse('/message', `must be a string, not ${kindOf(rawMessage)}`);
    message = reduceMessage(rawMessage, LOCATIONS_LIMITS.messageLength) || null;
  }
  const locations = memberOf(root, 'locations');
  const groups = current ? memberOf(root, 'grouped_locations') : undefined;
  return {
    locations: locations === undefined ? [] : normalizeLocationMap(locations, '/locations'),
    groups: groups === undefined ? [] : normalizeGroups(groups, '/grouped_locations', 1),
    message,
  };
}

function failure(refusal: Refusal): LocationsFailure {
  const detail =
    refusal.path === null ? refusal.reason : refusal.path === '' ? refusal.reason : `${refusal.path} ${refusal.reason}`;
  return {
    ok: false,
    code: refusal.code,
    message: LOCATIONS_FAILURE_MESSAGES[refusal.code],
    detail,
    path: refusal.path,
  };
}

function parseBody(input: unknown): unknown {
  let text: string;
  if (typeof input === 'string') {
    text = input;
  } else if (input instanceof Uint8Array) {
    try {
      // Strips a UTF-8 byte order mark, as fetch's Response.text() does.
      text = new TextDecoder('utf-8', { fatal: true }).decode(input);
    } catch {
      throw new Refusal('invalid_json', null, 'the body is not valid UTF-8');
    }
  } else if (input === undefined) {
    throw new Refusal('invalid_json', null, 'the body is empty');
  } else {
    return input;
  }
  const parsed = parseOrderedJson(text);
  if (!parsed.ok) throw new Refusal('invalid_json', null, `${parsed.reason} at position ${parsed.position}`);
  return parsed.value;
}

/**
 * Validates and normalises a locations response. A string or bytes are the raw body and are
 * parsed keeping each `locations` object's key order (digit-only extids included); any other
 * value is taken as already parsed, with whatever key order JavaScript gave it.
 */
export function normalizeLocationsResponse(input: unknown, options: NormalizeLocationsOptions = {}): LocationsResult {
  try {
    return { ok: true, tree: normalizeRoot(parseBody(input), options.contractVersion ?? '2026-09-21') };
  } catch (caught) {
    if (caught instanceof Refusal) return failure(caught);
    throw caught;
  }
}

// ---------------------------------------------------------------------------------------------
// Tool-side builder

export interface LocationEntryInput {
  readonly type: LocationType;
  readonly label: string;
  readonly description?: string | undefined;
  readonly points?: number | undefined;
}

export interface LocationEntryJson {
  type: LocationType;
  label: string;
  description?: string;
  points?: number;
}

export interface LocationGroupJson {
  label: string;
  description?: string;
  locations?: Record<string, LocationEntryJson>;
  grouped_locations?: LocationGroupJson[];
}

export interface LocationsResponseJson {
  locations?: Record<string, LocationEntryJson>;
  grouped_locations?: LocationGroupJson[];
  message?: string;
}

/** What the service would refuse, thrown by the builder with the service's own message. */
export class LocationsResponseError extends Error {
  override readonly name = 'LocationsResponseError';
  constructor(
    readonly code: LocationsFailureCode | 'builder_misuse',
    readonly detail: string,
    readonly path: string | null,
    message: string,
  ) {
    super(message);
  }
}

function misuse(detail: string): LocationsResponseError {
  return new LocationsResponseError('builder_misuse', detail, null, detail);
}

abstract class LocationContainer {
  protected readonly entries = new OrderedObject();
  protected readonly subgroups: LocationGroupBuilder[] = [];

  constructor(protected readonly contractVersion: ContractVersion) {}

  /**
   * Adds a location. A second entry with the same extid in the same map is refused here: JSON
   * can hold only one of them, so the service would silently see just the last.
   */
  location(extid: string, entry: LocationEntryInput): this {
    if (this.entries.has(extid)) {
      throw misuse(`extid "${extid}" is already in this locations map; a JSON object keeps only one of them`);
    }
    const node = new OrderedObject();
    node.set('type', entry.type);
    node.set('label', entry.label);
    if (entry.description !== undefined) node.set('description', entry.description);
    if (entry.points !== undefined) node.set('points', entry.points);
    this.entries.set(extid, node);
    return this;
  }

  /** Adds a collapsible group; `build` fills it with locations and subgroups. */
  group(label: string, build?: (group: LocationGroupBuilder) => void): this {
    if (this.contractVersion !== '2026-09-21') {
      throw misuse(`grouped_locations is not part of the ${this.contractVersion} locations response; the service would ignore it (decision GAP-46)`);
    }
    const child = new LocationGroupBuilder(label, this.contractVersion);
    build?.(child);
    this.subgroups.push(child);
    return this;
  }
}

export class LocationGroupBuilder extends LocationContainer {
  #description: string | undefined;

  constructor(
    private readonly label: string,
    contractVersion: ContractVersion,
  ) {
    super(contractVersion);
  }

  description(text: string): this {
    this.#description = text;
    return this;
  }

  /** @internal */
  toNode(): OrderedObject {
    const node = new OrderedObject();
    node.set('label', this.label);
    if (this.#description !== undefined) node.set('description', this.#description);
    if (this.entries.size > 0) node.set('locations', this.entries);
    if (this.subgroups.length > 0) node.set('grouped_locations', this.subgroups.map((g) => g.toNode()));
    return node;
  }
}

export class LocationsResponseBuilder extends LocationContainer {
  #message: string | undefined;

  message(text: string): this {
    if (this.contractVersion !== '2026-09-21') {
      throw misuse(`message is not part of the ${this.contractVersion} locations response; the service would ignore it (decision GAP-46)`);
    }
    this.#message = text;
    return this;
  }

  /** The response as sent; `locations` is always present, so it is never empty of meaning. */
  #node(): OrderedObject {
    const node = new OrderedObject();
    node.set('locations', this.entries);
    if (this.subgroups.length > 0) node.set('grouped_locations', this.subgroups.map((g) => g.toNode()));
    if (this.#message !== undefined) node.set('message', this.#message);
    return node;
  }

  /** The picker the service would show for this response; throws what the service would refuse. */
  toPickerTree(): PickerTree {
    const result = normalizeLocationsResponse(this.#node(), { contractVersion: this.contractVersion });
    if (!result.ok) {
      throw new LocationsResponseError(
        result.code,
        result.detail,
        result.path,
        `the service would refuse this locations response: ${result.message} (${result.detail})`,
      );
    }
    return result.tree;
  }

  /**
   * A plain object for JSON.stringify or a framework's res.json(). JavaScript objects list
   * digit-only keys first, so an extid such as "10" moves ahead of the others; use toJSONText()
   * when such extids must keep their place.
   */
  toJSON(): LocationsResponseJson {
    this.toPickerTree();
    return toPlain(this.#node()) as LocationsResponseJson;
  }

  /** The response body as JSON text, every locations map in the order it was built. */
  toJSONText(): string {
    this.toPickerTree();
    return stringifyOrdered(this.#node());
  }
}

export function locationsResponse(options: NormalizeLocationsOptions = {}): LocationsResponseBuilder {
  return new LocationsResponseBuilder(options.contractVersion ?? '2026-09-21');
}
