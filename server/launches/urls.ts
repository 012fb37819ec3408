/**
 * Every URL the service hands a tool, built from `PUBLIC_URL` (decisions L-01 to L-04). Tools call them
 * exactly as given, so these functions are the only place their shape is written down on the server side.
 */
const seg = encodeURIComponent;

export interface RowUrlSet {
  context: string;
  location: string;
  member: string;
  member_location: string;
}

export class ServiceUrls {
  readonly origin: string;

  constructor(publicUrl: string) {
    this.origin = new URL(publicUrl).origin;
  }

  /** `api.domain`: the host (and port, when not the default) of the API. */
  get apiDomain(): string {
    return new URL(this.origin).host;
  }

  private app(contextId: string, appId: string): string {
    return `${this.origin}/v1/contexts/${seg(contextId)}/apps/${seg(appId)}`;
  }

  contextRow(contextId: string, appId: string): string {
    return `${this.app(contextId, appId)}/storage`;
  }

  locationRow(contextId: string, appId: string, locationId: string): string {
    return `${this.app(contextId, appId)}/locations/${seg(locationId)}/storage`;
  }

  memberRow(contextId: string, appId: string, memberId: string): string {
    return `${this.app(contextId, appId)}/members/${seg(memberId)}/storage`;
  }

  memberLocationRow(contextId: string, appId: string, locationId: string, memberId: string): string {
    return `${this.app(contextId, appId)}/locations/${seg(locationId)}/members/${seg(memberId)}/storage`;
  }

  /** A row's files URL is its storage URL with `/storage` replaced by `/files` (L-02). */
  filesOf(storageUrl: string): string {
    return storageUrl.replace(/\/storage$/, '/files');
  }

  rows(contextId: string, appId: string, locationId: string, memberId: string): RowUrlSet {
    return {
      context: this.contextRow(contextId, appId),
      location: this.locationRow(contextId, appId, locationId),
      member: this.memberRow(contextId, appId, memberId),
      member_location: this.memberLocationRow(contextId, appId, locationId, memberId),
    };
  }

  files(rows: RowUrlSet): RowUrlSet {
    return {
      context: this.filesOf(rows.context),
      location: this.filesOf(rows.location),
      member: this.filesOf(rows.member),
      member_location: this.filesOf(rows.member_location),
    };
  }

  /** The `/contexts/...` score URL (L-03): the form `grade.submit` carries, valid for both credentials. */
  score(contextId: string, appId: string, locationId: string, memberId: string): string {
    return `${this.app(contextId, appId)}/locations/${seg(locationId)}/members/${seg(memberId)}/scores`;
  }

  /** The account form of the score URL (L-03), `api.token` only. */
  accountScore(memberId: string, appId: string, contextId: string, locationId: string): string {
    return `${this.origin}/account/v1/users/${seg(memberId)}/apps/${seg(appId)}/contexts/${seg(contextId)}/locations/${seg(locationId)}/scores`;
  }

  provisionContext(contextId: string, appId: string): string {
    return `${this.app(contextId, appId)}/provision`;
  }

  provisionLocation(contextId: string, appId: string, locationId: string): string {
    return `${this.app(contextId, appId)}/locations/${seg(locationId)}/provision`;
  }

  jwks(): string {
    return `${this.origin}/.well-known/jwks.json`;
  }
}
