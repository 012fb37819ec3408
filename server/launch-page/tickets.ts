/**
 * Launch tickets (decision S-10): 43 random characters naming one (placement, member), usable once,
 * for 120 seconds. A ticket is what a person's browser carries to `GET /launch/{ticket}`; the launch
 * token itself is minted when that page is served, so its 300 seconds start then.
 */
import type { Services } from '../http/services.js';
import type { JsonValue } from '../store/index.js';
import { isoFromMs } from '../store/index.js';
import { PlacementError } from '../placements/errors.js';

export const LAUNCH_TICKET_TTL_SECONDS = 120;

/** What a ticket names. Kept small: everything else is read fresh when the page is opened. */
export interface TicketPayload {
  placement_id: string;
  member_id: string;
}

export interface IssuedTicket {
  ticket: string;
  /** `{origin}/launch/{ticket}` (decision L-08). */
  launchUrl: string;
  expiresAt: number;
  /** ISO 8601, as the dashboard's `LaunchTicket.expires`. */
  expires: string;
}

export function launchPageUrl(publicUrl: string, ticket: string): string {
  return `${new URL(publicUrl).origin}/launch/${ticket}`;
}

/** A ticket for a member of the placement's course to open the placement. */
export async function issueLaunchTicket(
  services: Pick<Services, 'store' | 'config'>,
  input: { placementId: string; memberId: string },
): Promise<IssuedTicket> {
  const placement = await services.store.placements.get(input.placementId);
  if (!placement) throw new PlacementError(404, 'placement_not_found', `no placement ${input.placementId}`);
  const member = await services.store.members.getInContext(placement.contextId, input.memberId);
  if (!member) {
    throw new PlacementError(422, 'member_not_in_context', `member ${input.memberId} is not a member of context ${placement.contextId}`);
  }
  const payload: TicketPayload = { placement_id: placement.id, member_id: member.id };
  const { ticket, expiresAt } = await services.store.launches.createTicket(payload as unknown as JsonValue, {
    ttlSeconds: LAUNCH_TICKET_TTL_SECONDS,
  });
  return { ticket, launchUrl: launchPageUrl(services.config.publicUrl, ticket), expiresAt, expires: isoFromMs(expiresAt) };
}

export function readTicketPayload(value: JsonValue): TicketPayload | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const placement = value['placement_id'];
  const member = value['member_id'];
  return typeof placement === 'string' && typeof member === 'string' ? { placement_id: placement, member_id: member } : null;
}
