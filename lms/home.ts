/**
 * `GET /` of the reference LMS (issue 29): a page that says what this is and where to go next, instead of
 * a bare 404, for a person who opens the URL `npm run lms` printed. It shows no secret: the control token
 * stays in its file.
 */
import type { ServerResponse } from 'node:http';
import { escapeHtml, sendHtml } from './http.js';
import { PATHS, urlOf, type Platform } from './platform.js';

export function homePage(platform: Pick<Platform, 'issuer' | 'profile'>, res: ServerResponse): void {
  const link = (path: string): string => `<a href="${escapeHtml(urlOf(platform, path))}"><code>${escapeHtml(urlOf(platform, path))}</code></a>`;
  sendHtml(
    res,
    200,
    'Reference LMS',
    `<h1>Reference LMS</h1>` +
      `<p>A small LTI 1.3 platform (profile <code>${escapeHtml(platform.profile.name)}</code>) for trying LTI tools, the Tool Integration Service included, without a school's LMS. It has no pages for people: it is driven through its control API.</p>` +
      `<ul><li>Issuer: <code>${escapeHtml(platform.issuer)}</code></li>` +
      `<li>OpenID configuration: ${link(PATHS.openidConfiguration)}</li>` +
      `<li>Public keys: ${link(PATHS.jwks)}</li></ul>` +
      `<h2>Next steps</h2><ol>` +
      `<li>Register a tool: <code>POST ${escapeHtml(urlOf(platform, '/controls/registrations/initiate'))}</code> with <code>{"tool_url": "…/lti/register"}</code> and open the <code>url</code> it answers.</li>` +
      `<li>Add a person, a course and an enrolment (<code>/controls/users</code>, <code>/controls/courses</code>), then place content with a Deep Linking launch (<code>/controls/deep-links</code>) and launch it (<code>/controls/launches</code>).</li>` +
      `</ol><p>Every control takes the control token as <code>Authorization: Bearer</code>; <code>npm run lms</code> printed where it is. README.md, section "Reference LMS", has each call.</p>`,
  );
}
