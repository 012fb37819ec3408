/**
 * Placing a location in a course: what an instructor's confirmation in the picker does. The placement
 * stores a copy of the entry the picker showed (contract, Locations rule 6), an assessment's gradebook
 * column is its LMS's (a school's makes it, LTI-15; the Sandbox's with its resource link, LTI-45), and the
 * provision requests the course and location levels need go out at once, without waiting for a first
 * student (contract, Provision URL). A failed provision request does not undo the placement (S-09).
 */
import type { components } from '../../generated/dashboard/types.js';
import { LOCATIONS_LIMITS } from '../../rules/locations.js';
import { reduceToPlainText } from '../../rules/plain-text.js';
import type { Services } from '../http/services.js';
import type { AppRecord, ContextRecord, LocationRecord, PlacementEntry, PlacementRecord, ProvisioningState } from '../store/index.js';
import { isoFromMs } from '../store/index.js';
import { assertAvailable } from './availability.js';
import { launchServiceCall, PlacementError } from './errors.js';
import { findOffered, lastPickerAnswer } from './picker.js';
import type { PickerLocationJson } from './picker.js';
import type { ProvisioningOutcome } from './provision.js';
import { ensureProvisioned } from './provision.js';

export type PlacementJson = components['schemas']['Placement'];

export interface PlacementOutcome {
  placement: PlacementRecord;
  location: LocationRecord;
  provisioning: ProvisioningOutcome;
}

export interface PlaceFromPickerInput {
  appId: string;
  contextId: string;
  extid: string;
  /** The instructor's name for the link, in place of the entry's label. */
  label?: string;
  /** Defaults to a fresh opaque value (NS-04). */
  resourceLink?: string;
}

/** Same rule as the picker's labels (GAP-10, GAP-11): plain text, at most the spec's length. */
const LABEL_MAX = LOCATIONS_LIMITS.labelLength;

/**
 * Places one location of the course's last picker answer. Refusals: 409 `picker_not_opened` before any
 * picker answer, 422 `extid_not_offered` for an extid the answer did not show, 422 `field_blank` for a
 * blank label, and the availability refusals of GAP-25.
 */
export async function placeFromPicker(services: Services, input: PlaceFromPickerInput): Promise<PlacementOutcome> {
  const { app, context } = await appInContext(services, input.appId, input.contextId);
  assertAvailable(app, context);
  let label: string | undefined;
  if (input.label !== undefined) {
    label = reduceToPlainText(input.label, LABEL_MAX);
    if (label === '') throw new PlacementError(422, 'field_blank', 'label cannot be blank');
  }
  const picker = await lastPickerAnswer(services, app.id, context.id);
  if (!picker) {
    throw new PlacementError(409, 'picker_not_opened', `no picker answer for context ${context.id}: open the picker first`);
  }
  const offered = findOffered(picker, input.extid);
  if (!offered) {
    throw new PlacementError(
      422,
      'extid_not_offered',
      `extid ${input.extid} was not in the last picker answer for context ${context.id}`,
    );
  }
  const location = await services.store.locations.get(offered.id);
  if (!location || location.appId !== app.id || location.deletedAt !== null) {
    // The answer names a location the store no longer has (a stored location deleted since the picker
    // showed it): the picker must be opened again.
    throw new PlacementError(409, 'picker_not_opened', `no picker answer for context ${context.id}: open the picker first`);
  }
  return placeEntry(services, {
    app,
    context,
    location,
    entry: entryFromPicker(offered, label),
    ...(input.resourceLink !== undefined ? { resourceLink: input.resourceLink } : {}),
  });
}

/** The copy a placement keeps: the entry as the picker showed it (with the instructor's label, if any). */
export function entryFromPicker(offered: PickerLocationJson, label?: string): PlacementEntry {
  return {
    extid: offered.extid,
    type: offered.type,
    label: label ?? offered.label,
    description: offered.description,
    points: offered.type === 'assessment' ? (offered.points ?? 100) : null,
  };
}

export interface PlaceEntryInput {
  app: AppRecord;
  context: ContextRecord;
  location: LocationRecord;
  entry: PlacementEntry;
  resourceLink?: string;
}

/** The placement itself: the copy, then provisioning. */
export async function placeEntry(services: Services, input: PlaceEntryInput): Promise<PlacementOutcome> {
  assertAvailable(input.app, input.context);
  const placement = await launchServiceCall(() =>
    services.launches.place({
      appId: input.app.id,
      contextId: input.context.id,
      locationId: input.location.id,
      entry: input.entry,
      ...(input.resourceLink !== undefined ? { resourceLink: input.resourceLink } : {}),
    }),
  );
  services.log.info('location placed', {
    app: input.app.id,
    context: input.context.id,
    location: input.location.id,
    placement: placement.id,
  });
  const provisioning = await ensureProvisioned(services, {
    app: input.app,
    context: input.context,
    locationId: input.location.id,
    entry: placement.entry,
  });
  return { placement, location: input.location, provisioning };
}

async function appInContext(services: Services, appId: string, contextId: string): Promise<{ app: AppRecord; context: ContextRecord }> {
  const app = await services.store.apps.get(appId);
  if (!app) throw new PlacementError(404, 'app_not_found', `no tool ${appId}`);
  const context = await services.store.contexts.get(contextId);
  if (!context) throw new PlacementError(404, 'context_not_found', `tool ${appId} has no course ${contextId}`);
  return { app, context };
}

/** The dashboard's `Placement` of a fresh placement. */
export function placementJson(outcome: PlacementOutcome): PlacementJson {
  const { provisioning } = outcome;
  const state = (level: { state: ProvisioningState } | null): ProvisioningState => level?.state ?? 'provisioned';
  return placementJsonOf(outcome.placement, outcome.location.extid, {
    context: state(provisioning.context),
    location: state(provisioning.location),
    error: provisioning.error,
  });
}

/**
 * The dashboard's `Placement`: the copy stored at placement time, with the location's extid when the copy
 * has none (a stored location placed under 2026-08-19), and its levels' provisioning as the caller read it.
 */
export function placementJsonOf(
  placement: PlacementRecord,
  locationExtid: string | null | undefined,
  provisioning: PlacementJson['provisioning'],
): PlacementJson {
  const entry = placement.entry;
  return {
    id: placement.id,
    context_id: placement.contextId,
    resource_link: placement.resourceLink,
    location: {
      id: placement.locationId,
      extid: entry.extid ?? locationExtid ?? placement.locationId,
      type: entry.type,
      label: entry.label,
      description: entry.description ?? null,
      points: entry.type === 'assessment' ? (entry.points ?? 100) : null,
    },
    line_item_id: placement.lineItemId,
    provisioning,
    created: isoFromMs(placement.createdAt),
  };
}
