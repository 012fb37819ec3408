/**
 * The order an archived contract lists a tool's stored locations in (decision S-14): 2026-08-25 the home
 * location first, then creation order; 2026-08-19 picker order. The archived management API lists them so,
 * and the picker offers a tool's stored locations in its contract's order.
 */
import type { ContractVersion, currentContractVersion } from '../../generated/index.js';
import type { Services } from '../http/services.js';
import type { LocationRecord } from '../store/index.js';

/** A contract whose tools keep stored locations: every one but the current. */
export type StoredLocationsVersion = Exclude<ContractVersion, typeof currentContractVersion>;

export async function storedLocations(services: Pick<Services, 'store'>, appId: string, version: StoredLocationsVersion): Promise<LocationRecord[]> {
  const stored = await services.store.locations.listStored(appId);
  if (version === '2026-08-19') return stored;
  return [...stored].sort(
    (a, b) => Number(b.isDefault) - Number(a.isDefault) || a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}
