/**
 * Where a school's LMS takes grades: the LTI Assignment and Grade Services token endpoint, the client ID
 * the school gave the service, and how to reach the URLs the LMS hands out.
 */
import {
  isSandboxSchool,
  sandboxIssuer,
  sandboxLineItemUrl,
  sandboxTokenUrl,
} from '../sandbox-lms/school.js';
import type { OrganizationRecord } from '../store/index.js';

export interface LmsPlatform {
  /** The OAuth 2.0 token endpoint as the LMS names it: the `aud` of the client assertion. */
  tokenUrl: string;
  /** `iss` and `sub` of the client assertion. */
  clientId: string;
  /**
   * The URL of a placement's gradebook column. `ref` is what the placement stores: an absolute line
   * item URL (the AGS `lineitem` claim of a school's LMS) or, for the Sandbox, the column's ID.
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
  headers: Record<string, string>;
  body?: string;
}

export interface LmsRegistry {
  /** The school's LMS, or null when the service knows no grade service for it. */
  platformFor(organization: OrganizationRecord): Promise<LmsPlatform | null>;
}

function isAbsoluteUrl(ref: string): boolean {
  return /^https?:\/\//i.test(ref);
}

export interface DefaultLmsRegistryOptions {
  /** The service's public origin, read at each call (the app may learn its port after it listens). */
  publicUrl: () => string;
  /**
   * Where this process reaches the Sandbox LMS, i.e. itself. Defaults to the public origin; set it when
   * the public origin does not route back to the process (a proxy that does not hairpin, tests).
   */
  sandboxTransportOrigin?: () => string | undefined;
  /** Schools with a real LMS registration (`server/lti/platforms.ts`, issue 13). */
  schools?: (organization: OrganizationRecord) => Promise<LmsPlatform | null>;
}

/**
 * The Sandbox LMS for Sandbox schools; other schools through `schools`. The Sandbox is reached over
 * real HTTP exactly like a school's LMS: only the transport origin may differ from the public one.
 */
export function createLmsRegistry(options: DefaultLmsRegistryOptions): LmsRegistry {
  return {
    async platformFor(organization) {
      const publicUrl = options.publicUrl();
      if (isSandboxSchool(organization, publicUrl)) {
        const publicOrigin = new URL(publicUrl).origin;
        return {
          tokenUrl: sandboxTokenUrl(publicUrl),
          clientId: organization.client,
          lineItemUrl: (contextId, ref) => (isAbsoluteUrl(ref) ? ref : sandboxLineItemUrl(publicUrl, contextId, ref)),
          transport: (url) => {
            const target = options.sandboxTransportOrigin?.();
            if (!target || !url.startsWith(`${sandboxIssuer(publicUrl)}/`)) return url;
            return `${new URL(target).origin}${url.slice(publicOrigin.length)}`;
          },
        };
      }
      return options.schools ? options.schools(organization) : null;
    },
  };
}
