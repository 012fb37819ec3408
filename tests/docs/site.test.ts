/**
 * The docs site works in a real browser with no network: `buildSite()` builds it into a temporary folder,
 * node:http serves it on 127.0.0.1, and Chromium opens every page once. Each reference page must show every
 * operation and webhook of its API, the index must list every API with its status, the changelog pages must
 * show the renames computed from the specs, no page may log a console error, and no request may leave the
 * local origin. Every page is measured at a phone's width (420 px, as loaded) and a laptop's (1280 px, the
 * same tab widened): see `layoutProblems`. One screenshot per page, at 420 px, goes to
 * test-artifacts/site/<page>-420.png (decision CI-40).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSite, LMS_GUIDES, type Site, type SitePage } from '../../scripts/docs.ts';
import { repoRoot } from '../../scripts/lib/apis.ts';
import { listOperations } from '../../scripts/lib/generators.ts';

const CHROMIUM = '/usr/bin/chromium';
/** A phone's width and a laptop's: every page is measured at both. */
const NARROW = 420;
const WIDE = 1280;
const artifacts = path.join(repoRoot, 'test-artifacts', 'site');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.css': 'text/css',
  '.js': 'text/javascript',
};

let site: Site;
let server: http.Server;
let origin: string;
let browser: Browser;

function serve(dir: string): Promise<http.Server> {
  const srv = http.createServer((req, res) => {
    void (async () => {
      const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
      const file = path.join(dir, pathname === '/' ? 'index.html' : pathname);
      if (!file.startsWith(dir + path.sep)) {
        res.writeHead(403).end();
        return;
      }
      try {
        const body = await readFile(file);
        res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(body);
      } catch {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      }
    })();
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

interface Visit {
  page: Page;
  consoleErrors: string[];
  foreignRequests: string[];
  failedRequests: string[];
}

/** The one tab every page is opened in: a tab per page cost a renderer's start-up each (CI-40). */
let tab: Page;
/** What the tab records for the page being visited. */
let current: Visit | null = null;

function watch(page: Page): void {
  page.on('console', (message) => {
    if (message.type() === 'error') current?.consoleErrors.push(`${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => current?.consoleErrors.push(`uncaught: ${error.message}`));
  page.on('request', (request) => {
    const url = request.url();
    if (!(url.startsWith(`${origin}/`) || url.startsWith('data:') || url.startsWith('blob:'))) current?.foreignRequests.push(url);
  });
  page.on('requestfailed', (request) => current?.failedRequests.push(`${request.url()}: ${request.failure()?.errorText ?? ''}`));
  page.on('response', (response) => {
    if (response.status() >= 400) current?.failedRequests.push(`${response.url()}: HTTP ${response.status()}`);
  });
}

/**
 * Opens a page at 420 px and records console errors and every request that is not to the local origin. A
 * Redoc page is ready when its script has rendered the title.
 */
async function visit(entry: SitePage): Promise<Visit> {
  await tab.setViewportSize({ width: NARROW, height: 900 });
  current = { page: tab, consoleErrors: [], foreignRequests: [], failedRequests: [] };
  await tab.goto(`${origin}/${entry.file}`, { waitUntil: 'load' });
  await tab.waitForLoadState('networkidle');
  if (entry.kind === 'reference') await tab.waitForSelector('[data-component-name="Typography/H1"]', { timeout: 60_000 });
  return current;
}

async function finish(visit: Visit, file: string): Promise<void> {
  await visit.page.waitForLoadState('networkidle');
  current = null;
  expect(visit.consoleErrors, `console errors on ${file}`).toEqual([]);
  expect(visit.foreignRequests, `requests leaving ${origin} from ${file}`).toEqual([]);
  expect(visit.failedRequests, `failed requests from ${file}`).toEqual([]);
}

interface MenuItem {
  label: string;
  href: string;
}

/**
 * Every item of Redoc's navigation. Groups (tags) open when clicked and may close others, so each group is
 * opened in turn and the items seen are collected across all of them.
 */
async function expandedMenu(page: Page): Promise<MenuItem[]> {
  const selector = '[data-component-name="Menu/MenuItem"]';
  await page.waitForSelector(selector, { timeout: 30_000 });
  // In the page itself, clicking the label as a person would: a Playwright round trip per read and per
  // click cost 16 s of the four reference pages' 22 s; in the page they take 1.4 s (CI-38).
  return page.evaluate(async (item) => {
    const seen = new Map<string, { label: string; href: string }>();
    const opened = new Set<string>();
    for (let round = 0; round < 50; round++) {
      for (const el of Array.from(document.querySelectorAll(item))) {
        const label = el.querySelector('[data-testid="menu-item-label"]')?.textContent?.trim() ?? '';
        const href = el.querySelector('a')?.getAttribute('href') ?? '';
        seen.set(`${href}|${label}`, { label, href });
      }
      const next = Array.from(document.querySelectorAll<HTMLAnchorElement>(`${item}.menu-item-type-group > a`)).find(
        (a) => !opened.has(a.getAttribute('href') ?? ''),
      );
      if (next === undefined) break;
      opened.add(next.getAttribute('href') ?? '');
      (next.querySelector<HTMLElement>('[data-testid="menu-item-label"]') ?? next).click();
      // Redoc renders the opened group on the next frame.
      await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    }
    return [...seen.values()];
  }, selector);
}

interface Measured {
  overflow: string | null;
  titleLines: number;
  title: string;
  /** Places where the page's title breaks inside a word (a date split at its hyphen). */
  titleSplits: string[];
  rawMarkdown: string[];
  links: string[];
  missingAnchors: string[];
}

/**
 * What is wrong with a loaded page, measured in it: sideways overflow, the title's lines and where they
 * break, Markdown links shown as text (outside code), and its links (checked by `brokenLinks`). Same-page
 * anchors are checked here, except on Redoc pages, whose router owns them.
 */
async function measure(page: Page, reference: boolean): Promise<Measured> {
  return page.evaluate((isReference) => {
    const root = document.documentElement;
    // Which elements reach past the window is looked for only when the page overflows (a Redoc page has
    // thousands of elements).
    const overflowing = root.scrollWidth > root.clientWidth;
    const wide = overflowing
      ? Array.from(document.querySelectorAll('body *'))
          .filter((el) => el.getBoundingClientRect().right > root.clientWidth + 1 && getComputedStyle(el).position !== 'fixed')
          .slice(0, 3)
          .map((el) => `${el.tagName.toLowerCase()}.${el.className.toString().split(' ')[0] ?? ''}`)
      : [];
    const h1 = document.querySelector('h1');
    const lineHeight = h1 ? parseFloat(getComputedStyle(h1).lineHeight) || parseFloat(getComputedStyle(h1).fontSize) * 1.3 : 0;
    // The title's line breaks: each must fall at a space.
    const titleSplits: string[] = [];
    if (h1) {
      const walker = document.createTreeWalker(h1, NodeFilter.SHOW_TEXT);
      const chars: Array<{ ch: string; top: number }> = [];
      for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null) {
        for (let i = 0; i < node.data.length; i++) {
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const rect = range.getClientRects()[0];
          if (rect) chars.push({ ch: node.data[i] ?? '', top: Math.round(rect.top) });
        }
      }
      for (let i = 1; i < chars.length; i++) {
        const before = chars[i - 1]!;
        const here = chars[i]!;
        if (here.top > before.top && before.ch.trim() !== '' && here.ch.trim() !== '') {
          titleSplits.push(`${chars.slice(Math.max(0, i - 8), i).map((c) => c.ch).join('')}|${chars.slice(i, i + 8).map((c) => c.ch).join('')}`);
        }
      }
    }
    // Markdown links shown as text; inline code stands as one word, code blocks are left out.
    const copy = document.body.cloneNode(true) as HTMLElement;
    copy.querySelectorAll('pre, script, style, textarea').forEach((el) => el.remove());
    copy.querySelectorAll('code').forEach((el) => el.replaceWith('x'));
    const rawMarkdown = [...(copy.textContent ?? '').matchAll(/\[[^\]\n]+\]\([^)\s]*\)/g)].map((m) => m[0]).slice(0, 5);
    const anchors = Array.from(document.querySelectorAll('a[href]')).map((a) => a.getAttribute('href') ?? '');
    const missingAnchors = isReference
      ? []
      : anchors.filter((href) => href.startsWith('#') && href.length > 1 && document.getElementById(decodeURIComponent(href.slice(1))) === null);
    return {
      overflow: overflowing ? `${root.scrollWidth} px wide (${wide.join(', ')})` : null,
      titleLines: h1 ? Math.round(h1.getBoundingClientRect().height / lineHeight) : 0,
      title: h1?.textContent ?? '',
      titleSplits,
      rawMarkdown,
      links: Array.from(document.querySelectorAll('a[href]')).map((a) => (a as HTMLAnchorElement).href),
      missingAnchors,
    };
  }, reference);
}

const linkStatus = new Map<string, Promise<number>>();

/**
 * The site's own links of a page that do not lead to a page of the site (each address fetched once). On a
 * Redoc page only links to files are the site's: Redoc's own (`/section/errors`, `/scores`) are routes its
 * script resolves inside the page.
 */
async function brokenLinks(links: readonly string[], reference: boolean): Promise<string[]> {
  const internal = [
    ...new Set(
      links
        .filter((href) => href.startsWith(`${origin}/`))
        .map((href) => href.replace(/#.*$/, ''))
        .filter((href) => !reference || /\.(html|json)$/.test(href)),
    ),
  ];
  const broken: string[] = [];
  for (const href of internal) {
    if (!linkStatus.has(href)) linkStatus.set(href, fetch(href).then((res) => res.status));
    const status = await linkStatus.get(href)!;
    if (status !== 200) broken.push(`${href}: HTTP ${status}`);
  }
  return broken;
}

function pagesOf(kind: SitePage['kind']): SitePage[] {
  return site.pages.filter((p) => p.kind === kind);
}

/** The files `layoutProblems` measured, so the last test can say every page of the site was. */
const measuredPages = new Set<string>();

/**
 * What is wrong with a visited page's layout and links (issue 29), measured as loaded at 420 px and again
 * with the same tab widened to 1280 px (a second load showed nothing more, CI-40): nothing may be wider than
 * the window (a horizontal scroll bar is a failure), and a title wraps only at spaces, on at most three lines
 * at 420 px and on one line at 1280 px on a reference page. Once per page, as they do not depend on the
 * width: every page but the index links back to it, shows no Markdown link as text, and has no link to a
 * page or place the site does not have. The page's one screenshot, of the window, is taken at 420 px.
 */
async function layoutProblems(v: Visit, entry: SitePage): Promise<string[]> {
  const reference = entry.kind === 'reference';
  const problems: string[] = [];
  const narrow = await measure(v.page, reference);
  // The window only: a full-page shot of a long page cost more than loading it.
  await v.page.screenshot({ path: path.join(artifacts, `${entry.file.replace(/\.html$/, '')}-${NARROW}.png`) });
  await v.page.setViewportSize({ width: WIDE, height: 900 });
  // Two frames: the resize's layout has run before the page is measured again.
  await v.page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  const wide = await measure(v.page, reference);
  for (const [width, measured] of [[NARROW, narrow], [WIDE, wide]] as const) {
    const at = `${entry.file} at ${width} px`;
    if (measured.overflow !== null) problems.push(`${at}: ${measured.overflow}`);
    if (measured.titleSplits.length > 0) problems.push(`${at}: the title "${measured.title}" breaks inside a word: ${measured.titleSplits.join(', ')}`);
  }
  if (narrow.titleLines > 3) problems.push(`${entry.file} at ${NARROW} px: the title "${narrow.title}" takes ${narrow.titleLines} lines`);
  if (reference && wide.titleLines !== 1) problems.push(`${entry.file} at ${WIDE} px: the title "${wide.title}" takes ${wide.titleLines} lines`);
  if (reference && /\(\d+\)$/.test(wide.title)) problems.push(`${entry.file}: the title "${wide.title}" ends in a number in brackets`);
  if (narrow.rawMarkdown.length > 0) problems.push(`${entry.file}: raw Markdown ${narrow.rawMarkdown.join(', ')}`);
  if (narrow.missingAnchors.length > 0) problems.push(`${entry.file}: links to no such place ${narrow.missingAnchors.join(', ')}`);
  if (entry.kind !== 'index' && !narrow.links.includes(`${origin}/index.html`)) problems.push(`${entry.file}: no link back to index.html`);
  problems.push(...(await brokenLinks(narrow.links, reference)).map((b) => `${entry.file}: ${b}`));
  measuredPages.add(entry.file);
  return problems;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); never run playwright install`);
  }
  const outDir = await mkdtemp(path.join(os.tmpdir(), 'tis-site-'));
  site = await buildSite({ outDir });
  await mkdir(artifacts, { recursive: true });
  server = await serve(site.outDir);
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
  tab = await browser.newPage();
  watch(tab);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (site) await rm(site.outDir, { recursive: true, force: true });
});

describe('docs site', () => {
  it('builds an index, a reference page per API and a changelog per version step', () => {
    const apis = pagesOf('reference').map((p) => p.api?.name);
    expect(apis.length).toBeGreaterThan(0);
    const contracts = pagesOf('reference').filter((p) => p.api?.contract).length;
    expect(pagesOf('changelog')).toHaveLength(Math.max(0, contracts - 1));
    expect(pagesOf('index')).toHaveLength(1);
  });

  it("index.html lists every API with its status, says which contract is current, links its changelog, the kit, the mocks and the LMS administrators' pages (LTI-65)", async () => {
    const entry = pagesOf('index')[0]!;
    const v = await visit(entry);
    expect(await layoutProblems(v, entry)).toEqual([]);
    const listed = await v.page.$$eval('li[data-api]', (items) =>
      items.map((li) => ({ api: li.getAttribute('data-api'), role: li.getAttribute('data-role'), text: (li as HTMLElement).innerText })),
    );
    const references = pagesOf('reference');
    expect(listed.map((l) => l.api)).toEqual(references.map((p) => p.api?.name));
    expect(listed[0]?.role).toBe('current');
    for (const item of listed) {
      const api = references.find((p) => p.api?.name === item.api)?.api;
      if (api?.role === 'archived') expect(item.text.toLowerCase()).toContain('archived');
      if (api?.role === 'current') expect(item.text.toLowerCase()).toContain('current');
      if (api?.role === 'implementation') expect(item.text.toLowerCase()).toContain('implementation-specific');
    }
    // Every link on the index leads to a page of the site (layoutProblems fetched each of them).
    const hrefs = await v.page.$$eval('a[href]', (links) => links.map((a) => (a as HTMLAnchorElement).href));
    for (const href of hrefs) expect(href.startsWith(`${origin}/`), href).toBe(true);

    const current = await v.page.$eval('#current', (el) => (el as HTMLElement).innerText);
    const currentApi = pagesOf('reference').find((p) => p.api?.role === 'current')?.api?.name ?? '';
    expect(current).toContain(`The current contract is ${currentApi}`);
    const starts = await v.page.$$eval('#current a, #start a', (links) => links.map((a) => a.getAttribute('href')));
    expect(starts).toEqual(expect.arrayContaining([`${currentApi}.html`, 'kit.html', 'mocks.html', '#changelog']));
    expect(starts.some((href) => href?.startsWith('changelog-') && href.endsWith(`-to-${currentApi}.html`))).toBe(true);
    expect(await v.page.$$eval('#lms-admins a', (links) => links.map((a) => a.getAttribute('href')))).toEqual(LMS_GUIDES.map((g) => g.file));
    await finish(v, entry.file);
  });

  it.each(['2026-09-21', '2026-08-25', '2026-08-19', 'dashboard'])('the reference page of %s shows every operation and webhook', async (name) => {
    const entry = pagesOf('reference').find((p) => p.api?.name === name);
    expect(entry, `redocly.yaml lists ${name}`).toBeDefined();
    if (entry?.api === undefined) return;
    const bundle = site.bundles.get(entry.api.name);
    expect(bundle).toBeDefined();
    if (bundle === undefined) return;
    const v = await visit(entry);
    // Measured at 420 px as loaded, then at 1280 px, where the navigation below is read.
    expect(await layoutProblems(v, entry)).toEqual([]);
    expect(await v.page.$$eval('nav.site-nav a', (links) => links.map((a) => a.getAttribute('href')))).toEqual(['index.html']);
    const menu = await expandedMenu(v.page);
    const expected = [...listOperations(bundle, 'paths'), ...listOperations(bundle, 'webhooks')];
    expect(expected.length).toBeGreaterThan(0);
    const missing: string[] = [];
    for (const op of expected) {
      // Redoc 3 lists each operation in the navigation as its summary followed by the method, linking to
      // `#/<tag>/<operationid>`; both must be there.
      const anchor = `/${op.id.toLowerCase()}`;
      const item = menu.find((m) => m.href.toLowerCase().endsWith(anchor));
      if (item === undefined) missing.push(`${op.id} (${op.method.toUpperCase()} ${op.path}): no link ending ${anchor}`);
      else if (!item.label.startsWith(op.summary)) missing.push(`${op.id}: the link says "${item.label}", not "${op.summary}"`);
    }
    expect(missing).toEqual([]);
    // One entry per thing: no label twice in the navigation (two "Submit a score" entries were indistinguishable).
    const labels = menu.map((m) => m.label);
    expect(labels.filter((label, i) => labels.indexOf(label) !== i), `duplicate navigation entries on ${entry.file}`).toEqual([]);
    // Redoc shows server descriptions as plain text: no Markdown backticks may reach the Servers box.
    const servers = await v.page.evaluate(() =>
      Array.from(document.querySelectorAll('[data-testid="panel-servers"]')).map((panel) => (panel as HTMLElement).textContent ?? ''),
    );
    expect(servers.length, 'the page shows a Servers box').toBeGreaterThan(0);
    for (const text of servers) expect(text).not.toContain('`');
    // The title says which kind of API this is.
    const title = await v.page.title();
    expect(title).toContain(entry.api.role === 'implementation' ? 'implementation-specific' : entry.api.role);
    await finish(v, entry.file);
  });

  it('the changelog pages show the renames, removals and additions computed from the specs', async () => {
    const changelogs = pagesOf('changelog');
    expect(changelogs.length).toBeGreaterThan(0);
    for (const entry of changelogs) {
      const v = await visit(entry);
      expect(await layoutProblems(v, entry)).toEqual([]);
      const text = await v.page.evaluate(() => document.body.innerText);
      const diff = entry.diff;
      expect(diff).toBeDefined();
      if (diff === undefined) continue;
      for (const change of diff.schemas.changed) {
        for (const r of change.renamed) expect(text, `${entry.file}: ${change.name}`).toContain(`${r.from} → ${r.to}`);
        for (const p of change.added) expect(text, `${entry.file}: ${change.name}`).toContain(p);
      }
      for (const op of diff.operations.removed) expect(text).toContain(`${op.method} ${op.path}`);
      for (const hook of diff.webhooks.added) expect(text).toContain(hook.name);
      await finish(v, entry.file);
    }
    const all = new Map(changelogs.map((c) => [`${c.older} → ${c.newer}`, c]));
    const step1 = all.get('2026-08-19 → 2026-08-25');
    const step2 = all.get('2026-08-25 → 2026-09-21');
    expect(step1 && step2, 'both contract steps have a changelog').toBeTruthy();
    const renames = (page: SitePage | undefined): string[] =>
      page?.diff?.schemas.changed.flatMap((c) => c.renamed.map((r) => `${c.name}: ${r.from} → ${r.to}`)) ?? [];
    expect(renames(step1)).toEqual(
      expect.arrayContaining(['LaunchClaims: user.role → user.groups', 'LaunchClaims: resource_link_id → resource_link', 'LaunchClaims: organization.id → organization.deployment']),
    );
    expect(renames(step2)).toContain('LaunchClaims: grade_passback → grade');
  });

  it("the guides: the kit's install line, the mock instructions, and each LMS administrators' page links the others and says how to connect its LMS (LTI-65)", async () => {
    const says: Record<string, string[]> = {
      'kit.html': ['npm install "$TIS/client/tool-integration-kit-0.1.0.tgz"'],
      'mocks.html': ['npm run mock'],
      'lms.html': ['/lti/register', 'What the service asks of your LMS', 'https://purl.imsglobal.org/spec/lti-ags/scope/score', 'Activating a registration', 'tis lms activate'],
      'lms-canvas.html': ['/lti/canvas.json', 'https://canvas.instructure.com', 'lms add'],
      'lms-moodle.html': ['Add LTI Advantage', '/lti/register', 'grade sync only'],
      'lms-brightspace.html': ['--token-audience https://api.brightspace.com/auth/token', 'authorization_server'],
      'lms-blackboard.html': ['--issuer https://blackboard.com', 'global client ID', 'Deployment ID'],
    };
    const guides = pagesOf('guide');
    expect(guides.map((g) => g.file).sort()).toEqual(Object.keys(says).sort());
    for (const entry of guides) {
      const v = await visit(entry);
      expect(await layoutProblems(v, entry)).toEqual([]);
      const text = await v.page.evaluate(() => document.body.innerText);
      for (const phrase of says[entry.file] ?? []) expect(text, entry.file).toContain(phrase);
      const guide = LMS_GUIDES.find((g) => g.file === entry.file);
      if (guide) {
        const others = await v.page.$$eval('nav.crumbs a', (links) => links.map((a) => a.getAttribute('href')));
        expect(others).toEqual(['index.html', ...LMS_GUIDES.filter((o) => o.file !== guide.file).map((o) => o.file)]);
      }
      await finish(v, entry.file);
    }
  });

  it('every page of the site was visited and measured above, each reference page among them', () => {
    expect(pagesOf('reference').map((p) => p.api?.name).sort()).toEqual(['2026-08-19', '2026-08-25', '2026-09-21', 'dashboard']);
    expect([...measuredPages].sort()).toEqual(site.pages.map((p) => p.file).sort());
  });
});
