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
