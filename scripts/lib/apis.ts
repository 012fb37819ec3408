/**
 * The APIs of this repository, read from `redocly.yaml` so that lint, generate, check and docs agree on one
 * list. An API key there is `<name>@<role>`: `name` is the folder under `generated/` and the page under
 * `site/`; a name shaped like a date (YYYY-MM-DD) is a published contract version, anything else (the
 * dashboard) is this implementation's own API.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export type ApiRole = 'current' | 'archived' | 'implementation';

export interface ApiEntry {
  /** The key in redocly.yaml, e.g. `2026-09-21@current`; what `redocly lint <key>` takes. */
  readonly key: string;
  /** Folder name under generated/ and page name under site/, e.g. `2026-09-21` or `dashboard`. */
  readonly name: string;
  readonly role: ApiRole;
  /** True for the published contract versions, false for the dashboard API. */
  readonly contract: boolean;
  /** Absolute path of the root `openapi.yaml`. */
  readonly root: string;
  /** The root relative to the repository, with forward slashes, as written in redocly.yaml. */
  readonly rootRelative: string;
}

const DATE_NAME = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Reads `redocly.yaml` and returns its APIs: the current contract first, then the archived contracts from
 * newest to oldest, then the implementation-specific APIs by name. The order is the one every listing uses.
 */
export function loadApis(root: string = repoRoot): ApiEntry[] {
  const configPath = path.join(root, 'redocly.yaml');
  const config = parse(readFileSync(configPath, 'utf8')) as { apis?: Record<string, { root?: unknown }> };
  const entries: ApiEntry[] = [];
  for (const [key, value] of Object.entries(config.apis ?? {})) {
    const [name = '', label = ''] = key.split('@');
    if (typeof value?.root !== 'string' || name === '') {
      throw new Error(`redocly.yaml: API "${key}" needs a name and a root`);
    }
    const contract = DATE_NAME.test(name);
    const role: ApiRole = !contract ? 'implementation' : label === 'current' ? 'current' : 'archived';
    entries.push({
      key,
      name,
      role,
      contract,
      root: path.resolve(root, value.root),
      rootRelative: value.root.replace(/\\/g, '/'),
    });
  }
  const currents = entries.filter((e) => e.role === 'current');
  if (currents.length > 1) {
    throw new Error(`redocly.yaml: more than one current contract (${currents.map((e) => e.key).join(', ')})`);
  }
  const rank = (e: ApiEntry): number => (e.role === 'current' ? 0 : e.role === 'archived' ? 1 : 2);
  return entries.sort((a, b) => {
    const byRank = rank(a) - rank(b);
    if (byRank !== 0) return byRank;
    // Contracts newest first (dates sort as strings); other APIs alphabetically.
    return a.contract ? b.name.localeCompare(a.name) : a.name.localeCompare(b.name);
  });
}

/** The contract versions, current first, then archived from newest to oldest. */
export function contractApis(apis: readonly ApiEntry[]): ApiEntry[] {
  return apis.filter((a) => a.contract);
}
