/** The service's LMS-facing URLs (decision LTI-02), from its public origin. */
export class LtiUrls {
  readonly origin: string;

  constructor(publicUrl: string) {
    this.origin = new URL(publicUrl).origin;
  }

  register(): string {
    return `${this.origin}/lti/register`;
  }

  login(): string {
    return `${this.origin}/lti/login`;
  }

  /** The one `redirect_uri` and `target_link_uri`. */
  launch(): string {
    return `${this.origin}/lti/launch`;
  }

  deepLinking(): string {
    return `${this.origin}/lti/deep-linking`;
  }

  link(): string {
    return `${this.origin}/lti/link`;
  }

  /** The service's signing keys: one key set for tools and LMSes (decision LTI-04). */
  jwks(): string {
    return `${this.origin}/.well-known/jwks.json`;
  }

  canvasConfiguration(): string {
    return `${this.origin}/lti/canvas.json`;
  }

  /** Whether a `target_link_uri` aims at this service. */
  isOwn(url: string): boolean {
    try {
      return new URL(url).origin === this.origin;
    } catch {
      return false;
    }
  }
}

/**
 * The service's own LMS: the Sandbox's reference LMS, in process under `{PUBLIC_URL}/lms` (decisions
 * LTI-40, LTI-43). Its URLs are the service's own, reached through the transport to the process itself,
 * so the endpoint URL rules (which refuse loopback and private addresses) do not apply to them; they still
 * apply to every other URL, whatever origin it shares.
 */
export interface OwnLms {
  /** Its issuer, `{PUBLIC_URL}/lms`, read at each call (the service may learn its URL once it listens). */
  issuer(): string;
  /** Where this process reaches a URL of its own public origin. */
  transport(url: string): string;
}

/**
 * Where this process sends a request for `url` when it is under its own LMS's issuer (same scheme, host
 * and port as the issuer, no user info, a path under the issuer's after normalisation); null otherwise.
 */
export function ownLmsTarget(own: OwnLms | undefined, url: unknown): URL | null {
  if (!own || typeof url !== 'string') return null;
  let parsed: URL;
  let issuer: URL;
  try {
    parsed = new URL(url);
    issuer = new URL(own.issuer());
  } catch {
    return null;
  }
  if (parsed.username !== '' || parsed.password !== '' || parsed.origin !== issuer.origin) return null;
  const base = issuer.pathname.replace(/\/$/, '');
  if (parsed.pathname !== base && !parsed.pathname.startsWith(`${base}/`)) return null;
  try {
    return new URL(own.transport(parsed.href));
  } catch {
    return null;
  }
}
