/** Validates produced claims against the claim schemas of the bundled current spec (Ajv, draft 2020-12). */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule.default;

const spec = JSON.parse(readFileSync(new URL('../../../generated/2026-09-21/openapi.json', import.meta.url), 'utf8')) as {
  components: Record<string, unknown>;
};

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema({ $id: 'tis-2026-09-21', components: spec.components });

export function claimErrors(schema: 'LaunchClaims' | 'ProvisionClaims' | 'LocationsClaims', claims: unknown): string[] {
  const validate = ajv.getSchema(`tis-2026-09-21#/components/schemas/${schema}`);
  if (!validate) throw new Error(`no schema ${schema}`);
  if (validate(claims)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}
