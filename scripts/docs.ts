/**
 * `npm run docs`: builds site/, a static site that works with no network.
 *
 *   site/index.html                          the contracts (current first, archived marked) and the dashboard API
 *   site/<api>.html                          the Redoc reference of each API (`redocly build-docs --inlineBundle`)
 *   site/<api>.openapi.json                  the bundled spec the page was built from
 *   site/changelog-<older>-to-<newer>.html   what changed between consecutive contract versions, computed by
 *                                            scripts/changelog.ts from the bundles
 *   site/kit.html, site/mocks.html           the kit's README and the README's mock instructions, so a tool team
 *                                            finds everything from the index
 *   site/lms.html, site/lms-<family>.html    the LMS administrators' pages, from docs/lms/ (decision LTI-65)
 *
 * Specs are bundled afresh, so the site never shows a stale generated/.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadApis, repoRoot, type ApiEntry } from './lib/apis.ts';
import { bundleApi, serializeJson, type JsonObject } from './lib/bundle.ts';
import { redoclyBin, runNode, withoutBanner } from './lib/proc.ts';
import { markdownSection, markdownToHtml } from './lib/markdown.ts';
import { diffContracts, isEmptyDiff, type ContractDiff, type OperationRef, type WebhookRef } from './changelog.ts';

export interface SitePage {
  /** File name inside the site folder. */
  file: string;
  kind: 'index' | 'reference' | 'changelog' | 'guide';
  title: string;
  /** The API of a reference page. */
  api?: ApiEntry;
  /** The versions of a changelog page. */
  older?: string;
  newer?: string;
  diff?: ContractDiff;
}

export interface Site {
  outDir: string;
  pages: SitePage[];
  /** The bundled document of each API, by name. */
  bundles: Map<string, JsonObject>;
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
  :root { color-scheme: light; --fg: #1d2430; --muted: #5b6576; --line: #d9dee7; --accent: #1f5fbf; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); }
  main { max-width: 60rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; }
  h1 { font-size: 1.8rem; margin: 0 0 .25rem; }
  h2 { font-size: 1.25rem; margin: 2rem 0 .5rem; border-bottom: 1px solid var(--line); padding-bottom: .25rem; }
  h3 { font-size: 1.05rem; margin: 1.25rem 0 .25rem; }
  p.lead { color: var(--muted); margin-top: 0; }
  a { color: var(--accent); }
  ul.apis { list-style: none; padding: 0; }
  ul.apis li { border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem; margin: .5rem 0; }
  .badge { display: inline-block; font-size: .75rem; font-weight: 600; text-transform: uppercase; letter-spacing: .04em;
           border-radius: 999px; padding: .1rem .55rem; margin-left: .5rem; vertical-align: middle; }
  .current { background: #e3f4e8; color: #1b6b34; }
  .archived { background: #eef0f3; color: #5b6576; }
  .implementation { background: #fff3d6; color: #7a5200; }
  .links a { margin-right: 1rem; }
  table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
  th, td { text-align: left; border-bottom: 1px solid var(--line); padding: .35rem .5rem; vertical-align: top; overflow-wrap: anywhere; }
  code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f3f5f8; padding: 0 .25rem; border-radius: 4px; overflow-wrap: anywhere; }
  pre { background: #f3f5f8; padding: .75rem 1rem; border-radius: 6px; overflow-x: auto; max-width: 100%; }
  pre code { background: none; padding: 0; overflow-wrap: normal; }
  div.table { overflow-x: auto; }
  .current-contract { border: 1px solid #b9e0c4; background: #f3fbf5; border-radius: 8px; padding: .75rem 1rem; }
  .muted { color: var(--muted); }
  nav.crumbs { font-size: .9rem; margin-bottom: 1rem; }
  .nowrap { white-space: nowrap; }
`;

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${esc(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

function referenceFile(api: ApiEntry): string {
  return `${api.name}.html`;
}

function changelogFile(older: string, newer: string): string {
  return `changelog-${older}-to-${newer}.html`;
}

function apiTitle(api: ApiEntry, doc: JsonObject | undefined): string {
  const info = doc?.['info'];
  const title = info !== null && typeof info === 'object' && !Array.isArray(info) && typeof info['title'] === 'string' ? info['title'] : api.name;
  return title;
}

/** The LMS administrators' pages: the overview, then one page per LMS family, each from a file of docs/lms/. */
export const LMS_GUIDES: ReadonlyArray<{ file: string; source: string; title: string; nav: string; summary: string }> = [
  { file: 'lms.html', source: 'README.md', title: 'Connecting an LMS', nav: 'Overview', summary: "the service's LTI URLs, what it asks of your LMS, schools and deployments, activating a registration." },
  { file: 'lms-canvas.html', source: 'canvas.md', title: 'Connect Canvas', nav: 'Canvas', summary: 'a developer key from the JSON configuration, entered in the service by hand.' },
  { file: 'lms-moodle.html', source: 'moodle.md', title: 'Connect Moodle', nav: 'Moodle', summary: 'Dynamic Registration: paste one URL.' },
  { file: 'lms-brightspace.html', source: 'brightspace.md', title: 'Connect D2L Brightspace', nav: 'Brightspace', summary: 'Dynamic or standard registration, and its token audience.' },
  { file: 'lms-blackboard.html', source: 'blackboard.md', title: 'Connect Blackboard Learn', nav: 'Blackboard', summary: 'one global client ID; each institution is a deployment.' },
];

function renderLmsGuide(guide: (typeof LMS_GUIDES)[number], markdown: string): string {
  const links = LMS_GUIDES.map((g) => (g.file === guide.file ? `<strong aria-current="page">${esc(g.nav)}</strong>` : `<a href="${esc(g.file)}">${esc(g.nav)}</a>`));
  return page(guide.title, `<nav class="crumbs"><a href="index.html">All APIs</a> · ${links.join(' · ')}</nav>\n${markdownToHtml(markdown)}`);
}

function renderIndex(apis: ApiEntry[], bundles: Map<string, JsonObject>, changelogs: SitePage[]): string {
  const item = (api: ApiEntry): string => {
    const badge =
      api.role === 'current'
        ? '<span class="badge current">current</span>'
        : api.role === 'archived'
          ? '<span class="badge archived">archived</span>'
          : '<span class="badge implementation">implementation-specific</span>';
    const label = api.contract ? `Contract ${api.name}` : `${apiTitle(api, bundles.get(api.name))}`;
    const note =
      api.role === 'current'
        ? 'The contract tools integrate against today.'
        : api.role === 'archived'
          ? 'Still served to tools pinned to it (request header <code>Contract-Version</code>); not for new integrations.'
          : "This implementation's own API (dashboard, Sandbox, registration); not part of the published contract.";
    return `<li data-api="${esc(api.name)}" data-role="${api.role}">
  <strong>${esc(label)}</strong>${badge}
  <div class="muted">${note}</div>
  <div class="links"><a href="${esc(referenceFile(api))}">Reference</a><a href="${esc(`${api.name}.openapi.json`)}">OpenAPI (JSON)</a></div>
</li>`;
  };
  const contracts = apis.filter((a) => a.contract);
  const others = apis.filter((a) => !a.contract);
  const changelogItems = changelogs
    .map((c) => `<li><a href="${esc(c.file)}">${esc(c.older ?? '')} → ${esc(c.newer ?? '')}</a></li>`)
    .join('\n');
  const current = contracts.find((a) => a.role === 'current');
  const latestChangelog = changelogs[changelogs.length - 1];
  const start = current
    ? `<div class="current-contract" id="current">
<strong>The current contract is ${esc(current.name)}.</strong> New integrations build against it:
<a href="${esc(referenceFile(current))}">its reference</a>${latestChangelog ? `, <a href="${esc(latestChangelog.file)}">what changed since ${esc(latestChangelog.older ?? '')}</a>` : ''}.
</div>
<h2>For tool teams</h2>
<ul id="start">
<li><a href="kit.html">The kit</a>: the <code>tool-integration-kit</code> npm package, typed clients and helpers to verify a launch, read and patch rows, upload files and submit scores.</li>
<li><a href="mocks.html">Mock servers</a>: Prism mocks of every contract on your machine, to build a tool before any service runs.</li>
<li><a href="#changelog">Changelog</a> between the contract versions.</li>
</ul>`
    : '';
  const lmsAdmins = `<h2 id="for-lms-administrators">For LMS administrators</h2>
<p class="muted">Connecting a school's LMS to the service (LTI 1.3): one registration serves every tool.</p>
<ul id="lms-admins">
${LMS_GUIDES.map((g) => `<li><a href="${esc(g.file)}">${esc(g.title)}</a>: ${esc(g.summary)}</li>`).join('\n')}
</ul>`;
  return page(
    'Tool Integration Service: API reference',
    `<h1>Tool Integration Service</h1>
<p class="lead">API reference of the published contracts and of this implementation's own API, built from the OpenAPI specs in <code>openapi/</code>.</p>
${start}
${lmsAdmins}
<h2>Contracts</h2>
<ul class="apis" id="contracts">
${contracts.map(item).join('\n')}
</ul>
<h2>Implementation-specific</h2>
<ul class="apis" id="implementation">
${others.map(item).join('\n')}
</ul>
<h2 id="changelog">Changelog</h2>
<p class="muted">Computed from the specs: operations, webhooks and schema properties added, removed and renamed between consecutive contract versions.</p>
<ul id="changelogs">
${changelogItems}
</ul>`,
  );
}

function opRow(op: OperationRef): string {
  return `<tr><td><code>${esc(op.method)} ${esc(op.path)}</code></td><td><code>${esc(op.operationId ?? '')}</code></td><td>${esc(op.summary ?? '')}</td></tr>`;
}

function hookRow(hook: WebhookRef): string {
  return `<tr><td><code>${esc(hook.name)}</code> (${esc(hook.method)})</td><td><code>${esc(hook.operationId ?? '')}</code></td><td>${esc(hook.summary ?? '')}</td></tr>`;
}

function table(head: string[], rows: string[]): string {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>\n${rows.join('\n')}\n</tbody></table>`;
}

function renderChangelog(olderApi: ApiEntry, newerApi: ApiEntry, diff: ContractDiff): string {
  const parts: string[] = [
    `<nav class="crumbs"><a href="index.html">All APIs</a> · <a href="${esc(referenceFile(olderApi))}">${esc(olderApi.name)}</a> · <a href="${esc(referenceFile(newerApi))}">${esc(newerApi.name)}</a></nav>`,
    // A version is a date: kept on one line, so a narrow screen breaks the title between words only.
    `<h1>Changes from <span class="nowrap">${esc(olderApi.name)}</span> to <span class="nowrap">${esc(newerApi.name)}</span></h1>`,
    '<p class="lead">Computed from the bundled specs by <code>scripts/changelog.ts</code>. A rename is what the newer spec declares with <code>x-replaces</code>.</p>',
  ];
  const section = (id: string, title: string, content: string): void => {
    parts.push(`<section id="${id}"><h2>${esc(title)}</h2>\n${content}\n</section>`);
  };
  const none = '<p class="muted">None.</p>';
  section('operations-removed', 'Operations removed', diff.operations.removed.length ? table(['Operation', 'operationId', 'Summary'], diff.operations.removed.map(opRow)) : none);
  section('operations-added', 'Operations added', diff.operations.added.length ? table(['Operation', 'operationId', 'Summary'], diff.operations.added.map(opRow)) : none);
  const idChanges = [
    ...diff.operationIds.removed.map((id) => `<li>removed <code>${esc(id)}</code></li>`),
    ...diff.operationIds.added.map((id) => `<li>added <code>${esc(id)}</code></li>`),
  ];
  section('operation-ids', 'operationIds', idChanges.length ? `<ul>${idChanges.join('')}</ul>` : none);
  section('webhooks-removed', 'Webhooks removed', diff.webhooks.removed.length ? table(['Webhook', 'operationId', 'Summary'], diff.webhooks.removed.map(hookRow)) : none);
  section('webhooks-added', 'Webhooks added', diff.webhooks.added.length ? table(['Webhook', 'operationId', 'Summary'], diff.webhooks.added.map(hookRow)) : none);
  const schemaRows = diff.schemas.changed.map((change) => {
    const list = (items: string[]): string => items.map((p) => `<code>${esc(p)}</code>`).join(', ');
    return `<tr data-schema="${esc(change.name)}"><td><code>${esc(change.name)}</code></td><td>${change.renamed
      .map((r) => `<span class="rename"><code>${esc(r.from)}</code> → <code>${esc(r.to)}</code></span>`)
      .join('<br>')}</td><td>${list(change.added)}</td><td>${list(change.removed)}</td></tr>`;
  });
  section('schemas-changed', 'Schema properties', schemaRows.length ? table(['Schema', 'Renamed', 'Added', 'Removed'], schemaRows) : none);
  const comps = [
    ...diff.schemas.removed.map((n) => `<li>removed <code>${esc(n)}</code></li>`),
    ...diff.schemas.added.map((n) => `<li>added <code>${esc(n)}</code></li>`),
  ];
  section('schemas-added-removed', 'Schemas added and removed', comps.length ? `<ul>${comps.join('')}</ul>` : none);
  if (isEmptyDiff(diff)) parts.push('<p>No differences were found.</p>');
  return page(`Changelog ${olderApi.name} → ${newerApi.name}`, parts.join('\n'));
}

/** Builds the reference page of one API with Redoc, from a bundle written to `bundleFile`. */
async function buildReference(root: string, api: ApiEntry, bundleFile: string, outFile: string, title: string): Promise<void> {
  const result = await runNode(
    redoclyBin,
    // Stacked: one wide column, so the API's title fits on one line at 1280 px and nothing is squeezed into a
    // third panel at 420 px (decision KIT-10).
    ['build-docs', bundleFile, '--inlineBundle', '-o', outFile, '--title', title, '--lint-config', 'off', '--openapi.layout=stacked'],
    root,
  );
  if (result.code !== 0) {
    throw new Error(`redocly build-docs failed for ${api.name}:\n${withoutBanner(`${result.stdout}\n${result.stderr}`)}`);
  }
  await writeFile(outFile, withSiteNav(offline(await readFile(outFile, 'utf8'), api)));
}

/**
 * What a Redoc page gets from the rest of the site (KIT-51): a link back to the index above Redoc's own
 * layout, and a title that wraps at word boundaries in a size a 420 px screen holds on a few lines.
 */
const REDOC_EXTRA_STYLE = `
  .site-nav { font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; padding: 8px 20px; border-bottom: 1px solid #d9dee7; }
  .site-nav a { color: #1f5fbf; }
  [data-component-name="Typography/H1"] { overflow-wrap: normal; hyphens: manual; }
  @media (max-width: 600px) { [data-component-name="Typography/H1"] { font-size: 1.6rem; line-height: 1.25; } }
`;

export function withSiteNav(html: string): string {
  const nav = '<nav class="site-nav" aria-label="Site"><a href="index.html">All APIs</a></nav>';
  if (!/<body[^>]*>/.test(html)) throw new Error('a Redoc page without <body>: see withSiteNav() in scripts/docs.ts');
  return html.replace('</head>', `<style>${REDOC_EXTRA_STYLE}</style>\n</head>`).replace(/<body[^>]*>/, (body) => `${body}\n${nav}`);
}

/** A small local stand-in for the Redocly logo that Redoc's footer would fetch from cdn.redoc.ly. */
const LOGO_DATA_URI = `data:image/svg+xml,${encodeURIComponent(
  "<svg xmlns='http://www.w3.org/2000/svg' width='64' height='16' viewBox='0 0 64 16'><text x='0' y='12' font-family='system-ui,sans-serif' font-size='12' font-weight='600' fill='#5b6576'>Redocly</text></svg>",
)}`;

/**
 * Makes a Redoc page work with no network. `--inlineBundle` already embeds Redoc's scripts and the page uses
 * no web fonts, but Redoc 3 has no option to drop the "API docs by Redocly" footer, whose logo is an <img>
 * on cdn.redoc.ly, and Chromium asks for /favicon.ico when a page names no icon. Both are replaced here;
 * tests/docs/site.test.ts fails if any other request leaves the local origin.
 */
export function offline(html: string, api: Pick<ApiEntry, 'name'>): string {
  const logos = /https:\/\/cdn\.redoc\.ly\/redoc\/[A-Za-z0-9_.-]+\.svg/g;
  const result = html.replace(logos, LOGO_DATA_URI).replace('<head>', '<head>\n  <link rel="icon" href="data:,">');
  if (/https:\/\/cdn\.redoc\.ly\//.test(result)) {
    throw new Error(`site/${api.name}.html still names cdn.redoc.ly; see offline() in scripts/docs.ts`);
  }
  return result;
}

/**
 * The bundle as Redoc is given it. Redoc shows a server's description as plain text, so its Markdown code
 * spans would show their backticks: they are dropped to their text. Redoc titles the page "title (version)":
 * a contract's version is its date, written with non-breaking hyphens so a narrow screen never splits it;
 * another API's version (the dashboard's `1`) says nothing to a reader and is left out (decision KIT-51).
 * The published JSON keeps the spec as is.
 */
export function forRedoc(doc: JsonObject, api: Pick<ApiEntry, 'contract'>): JsonObject {
  const info = doc['info'];
  const titled: JsonObject =
    info !== null && typeof info === 'object' && !Array.isArray(info) && typeof info['version'] === 'string'
      ? { ...doc, info: { ...info, version: api.contract ? info['version'].replace(/-/g, '\u2011') : '' } }
      : doc;
  const servers = titled['servers'];
  if (!Array.isArray(servers)) return titled;
  return {
    ...titled,
    servers: servers.map((server) => {
      if (server === null || typeof server !== 'object' || Array.isArray(server) || typeof server['description'] !== 'string') return server;
      return { ...server, description: server['description'].replace(/`([^`]*)`/g, '$1') };
    }),
  };
}

/** A page of the site made from a README (or a part of one). */
function renderGuide(title: string, markdown: string): string {
  return page(title, `<nav class="crumbs"><a href="index.html">All APIs</a></nav>\n${markdownToHtml(markdown)}`);
}

/** Builds the whole site into `outDir` (emptied first) from the specs under `root`. */
export async function buildSite(options: { root?: string; outDir?: string } = {}): Promise<Site> {
  const root = options.root ?? repoRoot;
  const outDir = options.outDir ?? path.join(root, 'site');
  const apis = loadApis(root);
  const bundleList = await Promise.all(apis.map(async (api) => [api.name, await bundleApi(api.root)] as const));
  const bundles = new Map<string, JsonObject>(bundleList);

  if (path.resolve(outDir) === path.resolve(root) || path.resolve(outDir) === path.parse(path.resolve(outDir)).root) {
    throw new Error(`refusing to empty ${outDir}: the site needs a folder of its own`);
  }
  await mkdir(outDir, { recursive: true });
  for (const entry of await readdir(outDir)) await rm(path.join(outDir, entry), { recursive: true, force: true });
  const work = await mkdtemp(path.join(os.tmpdir(), 'tis-docs-'));
  const pages: SitePage[] = [];
  try {
    await Promise.all(
      apis.map(async (api) => {
        const doc = bundles.get(api.name) ?? {};
        const json = serializeJson(doc);
        const bundleFile = path.join(work, `${api.name}.json`);
        await writeFile(bundleFile, serializeJson(forRedoc(doc, api)));
        await writeFile(path.join(outDir, `${api.name}.openapi.json`), json);
        const status = api.role === 'implementation' ? 'implementation-specific' : api.role;
        const base = apiTitle(api, doc);
        const title = api.contract && !base.includes(api.name) ? `${base}, contract ${api.name}` : base;
        const full = title.toLowerCase().includes(status) ? title : `${title} (${status})`;
        await buildReference(root, api, bundleFile, path.join(outDir, referenceFile(api)), full);
      }),
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  for (const api of apis) {
    pages.push({ file: referenceFile(api), kind: 'reference', title: apiTitle(api, bundles.get(api.name)), api });
  }

  // Changelogs between consecutive versions, oldest step first.
  const contracts = apis.filter((a) => a.contract).sort((a, b) => a.name.localeCompare(b.name));
  const changelogs: SitePage[] = [];
  for (let i = 1; i < contracts.length; i++) {
    const olderApi = contracts[i - 1];
    const newerApi = contracts[i];
    if (olderApi === undefined || newerApi === undefined) continue;
    const diff = diffContracts(bundles.get(olderApi.name) ?? {}, bundles.get(newerApi.name) ?? {});
    const file = changelogFile(olderApi.name, newerApi.name);
    await writeFile(path.join(outDir, file), renderChangelog(olderApi, newerApi, diff));
    changelogs.push({ file, kind: 'changelog', title: `${olderApi.name} → ${newerApi.name}`, older: olderApi.name, newer: newerApi.name, diff });
  }
  pages.push(...changelogs);

  const guides: SitePage[] = [
    { file: 'kit.html', kind: 'guide', title: 'The kit: tool-integration-kit' },
    { file: 'mocks.html', kind: 'guide', title: 'Mock servers for tool teams' },
  ];
  const kitReadme = await readFile(path.join(root, 'client', 'README.md'), 'utf8');
  await writeFile(path.join(outDir, 'kit.html'), renderGuide(guides[0]!.title, kitReadme));
  const readme = await readFile(path.join(root, 'README.md'), 'utf8');
  await writeFile(path.join(outDir, 'mocks.html'), renderGuide(guides[1]!.title, markdownSection(readme, 'Mocks for tool teams')));
  pages.push(...guides);

  for (const guide of LMS_GUIDES) {
    const markdown = await readFile(path.join(root, 'docs', 'lms', guide.source), 'utf8');
    await writeFile(path.join(outDir, guide.file), renderLmsGuide(guide, markdown));
    pages.push({ file: guide.file, kind: 'guide', title: guide.title });
  }

  await writeFile(path.join(outDir, 'index.html'), renderIndex(apis, bundles, changelogs));
  pages.unshift({ file: 'index.html', kind: 'index', title: 'Tool Integration Service: API reference' });
  return { outDir, pages, bundles };
}

async function main(): Promise<void> {
  const started = performance.now();
  const site = await buildSite();
  for (const p of site.pages) console.log(`wrote site/${p.file}`);
  console.log(`docs: ${site.pages.length} pages in ${((performance.now() - started) / 1000).toFixed(1)} s; open site/index.html`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
