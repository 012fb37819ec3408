/**
 * A browser's way from a Sandbox launch link to the launch page (decision LTI-45): the LMS's launch URL
 * redirects to the service's OIDC login, which sets its state cookie (`SameSite=None; Secure`) and
 * redirects to the LMS's authorization endpoint, whose form_post carries the id_token back to the
 * service's `/lti/launch`, which redirects to the launch page. Followed here with the cookie, as a browser
 * does; a launch page URL (a link of a course that keeps the ticket) is answered as it is.
 */
import { expect } from 'vitest';

function formOf(html: string): { action: string; fields: Record<string, string> } | null {
  const unescape = (t: string): string =>
    t.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c))).replace(/&quot;/g, '"').replace(/&amp;/g, '&');
  const action = /<form[^>]*action="([^"]*)"/.exec(html)?.[1];
  if (action === undefined) return null;
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input[^>]*name="([^"]*)"[^>]*value="([^"]*)"/g)) fields[unescape(m[1] ?? '')] = unescape(m[2] ?? '');
  return { action: unescape(action), fields };
}

/** The launch page's URL (`{PUBLIC_URL}/launch/<ticket>`) a Sandbox launch link leads to. */
export async function launchPageOf(launchUrl: string): Promise<string> {
  const cookies = new Map<string, string>();
  let url = launchUrl;
  let post: Record<string, string> | null = null;
  for (let step = 0; step < 8; step += 1) {
    if (/^\/launch\/[A-Za-z0-9_-]+$/.test(new URL(url).pathname)) return url;
    const res: Response = await fetch(url, {
      method: post ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        ...(cookies.size > 0 ? { Cookie: [...cookies].map(([n, v]) => `${n}=${v}`).join('; ') } : {}),
        ...(post ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(post ? { body: new URLSearchParams(post).toString() } : {}),
    });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const at = pair?.indexOf('=') ?? -1;
      if (pair && at > 0) cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url).href;
      post = null;
      continue;
    }
    const html = await res.text();
    const form: ReturnType<typeof formOf> = res.status === 200 ? formOf(html) : null;
    expect(form?.fields['id_token'], `step ${step} at ${url} answered ${res.status}:\n${html.slice(0, 500)}`).toBeTruthy();
    url = new URL(form?.action ?? '', url).href;
    post = form?.fields ?? null;
  }
  throw new Error(`no launch page after 8 steps from ${launchUrl}`);
}
