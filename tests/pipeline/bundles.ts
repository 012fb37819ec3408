/** The generated bundles the pipeline tests read (generated/<api>/openapi.json and tool-openapi.json). */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadApis, repoRoot, type ApiEntry } from '../../scripts/lib/apis.ts';
import type { JsonObject } from '../../scripts/lib/bundle.ts';

export const generatedDir = path.join(repoRoot, 'generated');
export const apis: ApiEntry[] = loadApis();
export const contracts: ApiEntry[] = apis.filter((a) => a.contract);

export function generatedPath(api: Pick<ApiEntry, 'name'>, file: string): string {
  return path.join(generatedDir, api.name, file);
}

export function readJson(file: string): JsonObject {
  if (!existsSync(file)) {
    throw new Error(`${path.relative(repoRoot, file)} is missing; run \`npm run generate\``);
  }
  return JSON.parse(readFileSync(file, 'utf8')) as JsonObject;
}

export function readBundle(api: Pick<ApiEntry, 'name'>): JsonObject {
  return readJson(generatedPath(api, 'openapi.json'));
}

export function contract(name: string): ApiEntry {
  const found = contracts.find((a) => a.name === name);
  if (found === undefined) throw new Error(`redocly.yaml lists no contract ${name}`);
  return found;
}
