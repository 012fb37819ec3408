/**
 * Where a school's LMS takes grades: the LTI Assignment and Grade Services token endpoint, the client ID
 * the school gave the service, and how to reach the URLs the LMS hands out.
 */
import type { OrganizationRecord } from '../store/index.js';

export interface LmsPlatform {
  /** The OAuth 2.0 token endpoint as the LMS names it: the `aud` of the client assertion. */
  tokenUrl: string;
  /** `iss` and `sub` of the client assertion. */
  clientId: string;
  /**
   * The URL of a placement's gradebook column. `ref` is what the placement stores: the absolute line
   * item URL its LMS gave (a school's AGS `lineitem` claim, the Sandbox LMS's column, LTI-45).
   */
  lineItemUrl(contextId: string, ref: string): string;
  /** The URL this process sends a request to for a URL the LMS named (identity for a school's LMS). */
  transport(url: string): string;
  /** The client assertion's `aud` when it is not `tokenUrl` (Brightspace; decision LTI-03). */
  assertionAudience?: string;
  /** How requests to this LMS are sent (a school's LMS: under the endpoint URL rules); default `fetch`. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /**
   * One HTTP exchange with this LMS without `fetch`'s Request, Headers, Response and AbortSignal objects
   * (PERF-46); preferred over `fetch` when set. Bounds its own time and body size; never throws for what
   * the LMS or the network does: that is `{ failure }`, the reason in operator words.
   */
  exchange?: (request: LmsExchange) => Promise<{ status: number; body: string } | { failure: string }>;
}

export interface LmsExchange {
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  /** Which endpoint of the LMS this is, named in the failure's reason (LTI-124). */
  party: 'token_endpoint' | 'lineitem' | 'lineitems' | 'scores';
  headers: Record<string, string>;
  body?: string;
}

/** A school's active registration as grades need it: where to ask for a token, as which client. */
export interface GradeService {
  clientId: string;
  tokenUrl: string;
  tokenAudience: string | null;
}

export interface LmsRegistry {
  /**
   * The school's LMS, or null when the service knows no grade service for it. `known` is the school's
   * grade service already read with the score's records (PERF-70; null: none); absent, it is read here.
   */
  platformFor(organization: OrganizationRecord, known?: GradeService | null): Promise<LmsPlatform | null>;
}

export interface DefaultLmsRegistryOptions {
  /** Schools with a real LMS registration (`server/lti/platforms.ts`), the Sandbox's LMS among them (LTI-48). */
  schools?: (organization: OrganizationRecord, known?: GradeService | null) => Promise<LmsPlatform | null>;
}

/**
 * Every school's LMS through `schools`, the Sandbox's too: since the S-12 Sandbox gradebook is gone
 * (LTI-57) no school's grades go anywhere but to an LMS registered with the service.
 */
export function createLmsRegistry(options: DefaultLmsRegistryOptions): LmsRegistry {
  return {
    platformFor: (organization, known) => (options.schools ? options.schools(organization, known) : Promise.resolve(null)),
  };
}
