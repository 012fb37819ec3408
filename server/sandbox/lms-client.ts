/**
 * The Sandbox's calls to its LMS's controls (decision LTI-38), over HTTP: what an administrator or a
 * teacher does in a school's LMS, done for the tool team by the Sandbox (its trial school, trial course and
 * people, placements as resource links, launch links, the gradebook).
 */
export interface LmsRegistrationJson {
  client_id: string;
  client_name: string;
  grants_line_item_scope: boolean;
  deployments: { deployment_id: string; title: string }[];
}

export interface LmsCourseJson {
  id: string;
  client_id: string | null;
  deployment_id: string;
  title: string;
  label: string;
  history: string[];
  enrolments: { sub: string; roles: string[] }[];
  resource_links: LmsResourceLinkJson[];
}

export interface LmsResourceLinkJson {
  id: string;
  course_id: string;
  title: string;
  url: string | null;
  custom: Record<string, string>;
  line_items: { id: string; scoreMaximum: number; label: string }[];
}

export interface LmsGradebookJson {
  course_id: string;
  columns: {
    id: string;
    line_item_id: string;
    label: string;
    scoreMaximum: number;
    resourceLinkId?: string;
    scores: {
      userId: string;
      scoreGiven: number | null;
      scoreMaximum: number | null;
      comment: string | null;
      activityProgress: string;
      gradingProgress: string;
      timestamp: string;
      received: string;
    }[];
  }[];
}

/**
 * The Sandbox's LMS refused a control: this service's fault, never a dashboard caller's, except the 409 of
 * a record already made (deployment, user, course under a chosen ID), which the Sandbox reads as "exists".
 */
export class SandboxLmsControlError extends Error {
  constructor(
    readonly status: number,
    readonly control: string,
    readonly answer: string,
  ) {
    super(`the Sandbox LMS answered ${status} to ${control}: ${answer}`);
    this.name = 'SandboxLmsControlError';
  }
}

export class SandboxLmsClient {
  constructor(
    /** The LMS's issuer, as tools and browsers see it. */
    private readonly issuer: string,
    private readonly controlToken: string,
    /** Where this process reaches a public URL of its own. */
    private readonly transport: (url: string) => string,
  ) {}

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = this.transport(`${this.issuer}/controls${path}`);
    const res = await fetch(url, {
      method,
      headers: { Authorization: `Bearer ${this.controlToken}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    if (!res.ok) throw new SandboxLmsControlError(res.status, `${method} /controls${path}`, text.slice(0, 300));
    return (text === '' ? null : JSON.parse(text)) as T;
  }

  initiateRegistration(toolUrl: string): Promise<{ url: string; registration_token: string }> {
    return this.call('POST', '/registrations/initiate', { tool_url: toolUrl });
  }

  registrations(): Promise<{ registrations: LmsRegistrationJson[] }> {
    return this.call('GET', '/registrations');
  }

  setLineItemScope(clientId: string, grants: boolean): Promise<LmsRegistrationJson> {
    return this.call('PATCH', `/registrations/${encodeURIComponent(clientId)}`, { grants_line_item_scope: grants });
  }

  /** A school: a deployment of the registration, under the ID given (e.g. `sandbox-<app_id>`) or a new one. */
  createDeployment(clientId: string, title: string, deploymentId?: string): Promise<{ deployment_id: string; client_id: string; title: string }> {
    return this.call('POST', '/deployments', { client_id: clientId, title, ...(deploymentId !== undefined ? { deployment_id: deploymentId } : {}) });
  }

  /** Moves a school (deployment) to another registration of the LMS (LTI-97). */
  moveDeployment(deploymentId: string, clientId: string): Promise<{ deployment_id: string; client_id: string; title: string }> {
    return this.call('PATCH', `/deployments/${encodeURIComponent(deploymentId)}`, { client_id: clientId });
  }

  /** A person, under the `sub` given (e.g. `sandbox-student_1`) or a new one. */
  createUser(person: { sub?: string; given_name: string; family_name: string; email: string }): Promise<{ sub: string }> {
    return this.call('POST', '/users', person);
  }

  /** A course, under the ID given (409 when taken) or a new one. */
  createCourse(input: { id?: string; deployment_id: string; title: string; label: string }): Promise<LmsCourseJson> {
    return this.call('POST', '/courses', input);
  }

  course(courseId: string): Promise<LmsCourseJson> {
    return this.call('GET', `/courses/${encodeURIComponent(courseId)}`);
  }

  updateCourse(courseId: string, input: { title?: string; label?: string }): Promise<LmsCourseJson> {
    return this.call('PATCH', `/courses/${encodeURIComponent(courseId)}`, input);
  }

  copyCourse(
    courseId: string,
    input: { id?: string; title?: string; label?: string; deployment_id?: string; with_links: boolean; with_enrolments: boolean },
  ): Promise<LmsCourseJson> {
    return this.call('POST', `/courses/${encodeURIComponent(courseId)}/copies`, input);
  }

  enrol(courseId: string, sub: string, roles: string[]): Promise<null> {
    return this.call('PUT', `/courses/${encodeURIComponent(courseId)}/enrolments/${encodeURIComponent(sub)}`, { roles });
  }

  unenrol(courseId: string, sub: string): Promise<null> {
    return this.call('DELETE', `/courses/${encodeURIComponent(courseId)}/enrolments/${encodeURIComponent(sub)}`);
  }

  createLink(courseId: string, input: { title: string; url?: string; custom: Record<string, string>; line_item: { label: string; score_maximum: number; resource_id?: string; tag?: string } | null }): Promise<LmsResourceLinkJson> {
    return this.call('POST', `/courses/${encodeURIComponent(courseId)}/links`, input);
  }

  launch(resourceLinkId: string, sub: string): Promise<{ url: string; expires: string }> {
    return this.call('POST', '/launches', { resource_link_id: resourceLinkId, sub });
  }

  deepLink(courseId: string, sub: string): Promise<{ url: string; expires: string }> {
    return this.call('POST', '/deep-links', { course_id: courseId, sub });
  }

  gradebook(courseId: string): Promise<LmsGradebookJson> {
    return this.call('GET', `/courses/${encodeURIComponent(courseId)}/gradebook`);
  }

  /** Clears the course's scores and keeps its columns (the Sandbox's reset). */
  deleteScores(courseId: string): Promise<null> {
    return this.call('DELETE', `/courses/${encodeURIComponent(courseId)}/scores`);
  }

  refuseScores(lineItemId: string, status: number | null): Promise<{ line_item_id: string; refuses_scores_with: number | null }> {
    return this.call('PATCH', `/line-items/${encodeURIComponent(lineItemId)}`, { refuses_scores_with: status });
  }

  settings(input: { access_token_ttl_seconds?: number; id_token_ttl_seconds?: number; launch_ttl_seconds?: number; platform_storage?: boolean }): Promise<Record<string, unknown>> {
    return this.call('PATCH', '/settings', input);
  }

  /** The default lifetimes and no platform storage again. */
  resetSettings(): Promise<Record<string, unknown>> {
    return this.call('DELETE', '/settings');
  }

  // Added for the Sandbox LMS controls of the dashboard API (server/sandbox/controls/, decision LTI-66).

  link(resourceLinkId: string): Promise<LmsResourceLinkJson> {
    return this.call('GET', `/links/${encodeURIComponent(resourceLinkId)}`);
  }

  registration(clientId: string): Promise<LmsRegistrationJson> {
    return this.call('GET', `/registrations/${encodeURIComponent(clientId)}`);
  }

  currentSettings(): Promise<{ access_token_ttl_seconds: number; id_token_ttl_seconds: number; launch_ttl_seconds: number; platform_storage: boolean }> {
    return this.call('GET', '/settings');
  }

  // Added for a school's own settings (decisions LTI-71 to LTI-73).

  deploymentSettings(deploymentId: string): Promise<LmsDeploymentSettingsJson> {
    return this.call('GET', `/deployments/${encodeURIComponent(deploymentId)}/settings`);
  }

  /** Fields named are set (null: the LMS-wide value again); `null` as the whole patch clears them all. */
  setDeploymentSettings(deploymentId: string, patch: Partial<LmsDeploymentOverrides> | null): Promise<LmsDeploymentSettingsJson> {
    const path = `/deployments/${encodeURIComponent(deploymentId)}/settings`;
    return patch === null ? this.call('DELETE', path) : this.call('PATCH', path, patch);
  }

  // Added for the list controls (decision LTI-74).

  /** A page of courses whose IDs begin with `prefix`, oldest first; `next` is the `after` of the next page. */
  listCourses(query: { prefix: string; limit: number; after?: string }): Promise<{ courses: LmsCourseListJson[]; next: string | null }> {
    const params = new URLSearchParams({ prefix: query.prefix, limit: String(query.limit), ...(query.after !== undefined ? { after: query.after } : {}) });
    return this.call('GET', `/courses?${params.toString()}`);
  }

  /** A page of people whose `sub` begins with `prefix` or is one of `subs`, with every enrolment of theirs. */
  listUsers(query: { prefix: string; subs: readonly string[]; limit: number; after?: string }): Promise<{ users: LmsUserListJson[]; next: string | null }> {
    const params = new URLSearchParams({ prefix: query.prefix, limit: String(query.limit), ...(query.after !== undefined ? { after: query.after } : {}) });
    for (const sub of query.subs) params.append('sub', sub);
    return this.call('GET', `/users?${params.toString()}`);
  }
}

export interface LmsDeploymentOverrides {
  access_token_ttl_seconds: number | null;
  id_token_ttl_seconds: number | null;
  launch_ttl_seconds: number | null;
  grants_line_item_scope: boolean | null;
}

export interface LmsDeploymentSettingsJson {
  deployment_id: string;
  client_id: string;
  own: LmsDeploymentOverrides;
  effective: { access_token_ttl_seconds: number; id_token_ttl_seconds: number; launch_ttl_seconds: number; grants_line_item_scope: boolean };
}

export interface LmsCourseListJson {
  id: string;
  deployment_id: string;
  title: string;
  label: string;
  history: string[];
  created: string;
}

export interface LmsUserListJson {
  sub: string;
  given_name: string;
  family_name: string;
  email: string;
  created: string;
  enrolments: { course_id: string; roles: string[] }[];
}
