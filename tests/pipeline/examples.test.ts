/**
 * Every example in every generated spec validates against its schema with JSON Schema 2020-12, the dialect
 * of OpenAPI 3.1: media type `example`/`examples` (component examples followed), parameter and header
 * examples, and `example`/`examples` inside schemas. `$ref`s resolve into the bundle itself, which is added
 * to Ajv under an `$id` so that each location compiles as a reference into it.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { apis, generatedPath, readJson } from './bundles.ts';
import type { Json, JsonObject } from '../../scripts/lib/bundle.ts';

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Keywords whose value is a schema, or a map or list of schemas. */
const SCHEMA_VALUED = ['additionalProperties', 'items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems'];
const SCHEMA_MAPS = ['properties', 'patternProperties', 'dependentSchemas', '$defs'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];

interface ExampleCase {
  /** Where the example is, as a JSON pointer into the bundle (plus the component example it came from). */
  where: string;
  /** JSON pointer of the schema it must satisfy. */
  schemaPointer: string;
  value: Json;
}

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function child(pointer: string, ...tokens: (string | number)[]): string {
  return tokens.reduce<string>((p, t) => `${p}/${escapePointer(String(t))}`, pointer);
}

function resolvePointer(doc: JsonObject, pointer: string): Json | undefined {
  let node: Json | undefined = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) node = node[Number(token)];
    else if (isObject(node)) node = node[token];
    else return undefined;
  }
  return node;
}

/** Follows `$ref: '#/...'` (OpenAPI objects, not schemas) to the pointer of the object it names. */
function deref(doc: JsonObject, pointer: string): { pointer: string; node: JsonObject } | undefined {
  let current = pointer;
  for (let hops = 0; hops < 10; hops++) {
    const node = resolvePointer(doc, current);
    if (!isObject(node)) return undefined;
    const ref = node['$ref'];
    if (typeof ref !== 'string') return { pointer: current, node };
    if (!ref.startsWith('#')) throw new Error(`${current}: external $ref ${ref} in a bundle`);
    current = ref.slice(1);
  }
  throw new Error(`${pointer}: $ref chain too long`);
}

/** Collects every example of the document with the schema it belongs to. */
function collectExamples(doc: JsonObject): ExampleCase[] {
  const cases: ExampleCase[] = [];
  const seenSchemas = new Set<string>();
  const seenHolders = new Set<string>();

  const walkSchema = (pointer: string): void => {
    if (seenSchemas.has(pointer)) return;
    seenSchemas.add(pointer);
    const schema = resolvePointer(doc, pointer);
    if (!isObject(schema)) return;
    if ('example' in schema) cases.push({ where: child(pointer, 'example'), schemaPointer: pointer, value: schema['example'] ?? null });
    const examples = schema['examples'];
    if (Array.isArray(examples)) {
      examples.forEach((value, i) => cases.push({ where: child(pointer, 'examples', i), schemaPointer: pointer, value }));
    }
    for (const key of SCHEMA_VALUED) if (isObject(schema[key])) walkSchema(child(pointer, key));
    for (const key of SCHEMA_MAPS) {
      const map = schema[key];
      if (isObject(map)) for (const name of Object.keys(map)) walkSchema(child(pointer, key, name));
    }
    for (const key of SCHEMA_LISTS) {
      const list = schema[key];
      if (Array.isArray(list)) list.forEach((_, i) => walkSchema(child(pointer, key, i)));
    }
  };

  /** A media type, parameter or header: `schema` plus `example` or a map of Example objects. */
  const walkHolder = (pointer: string): void => {
    const resolved = deref(doc, pointer);
    if (resolved === undefined || seenHolders.has(resolved.pointer)) return;
    seenHolders.add(resolved.pointer);
    const { node } = resolved;
    const at = resolved.pointer;
    const content = node['content'];
    if (isObject(content)) for (const media of Object.keys(content)) walkHolder(child(at, 'content', media));
    if (!isObject(node['schema'])) return;
    const schemaPointer = child(at, 'schema');
    walkSchema(schemaPointer);
    if ('example' in node) cases.push({ where: child(at, 'example'), schemaPointer, value: node['example'] ?? null });
    const examples = node['examples'];
    if (isObject(examples)) {
      for (const name of Object.keys(examples)) {
        const example = deref(doc, child(at, 'examples', name));
        if (example === undefined || !('value' in example.node)) continue; // externalValue: nothing to check here
        const via = example.pointer === child(at, 'examples', name) ? '' : ` (${example.pointer})`;
        cases.push({ where: `${child(at, 'examples', name)}${via}`, schemaPointer, value: example.node['value'] ?? null });
      }
    }
  };

  const walkOperation = (pointer: string): void => {
    const op = resolvePointer(doc, pointer);
    if (!isObject(op)) return;
    if (Array.isArray(op['parameters'])) op['parameters'].forEach((_, i) => walkHolder(child(pointer, 'parameters', i)));
    if (op['requestBody'] !== undefined) {
      const body = deref(doc, child(pointer, 'requestBody'));
      if (body) walkHolder(body.pointer);
    }
    const responses = op['responses'];
    if (isObject(responses)) {
      for (const status of Object.keys(responses)) {
        const response = deref(doc, child(pointer, 'responses', status));
        if (response === undefined) continue;
        walkHolder(response.pointer);
        const headers = response.node['headers'];
        if (isObject(headers)) for (const h of Object.keys(headers)) walkHolder(child(response.pointer, 'headers', h));
      }
    }
  };

  for (const section of ['paths', 'webhooks']) {
    const items = doc[section];
    if (!isObject(items)) continue;
    for (const key of Object.keys(items)) {
      const item = deref(doc, child('', section, key));
      if (item === undefined) continue;
      if (Array.isArray(item.node['parameters'])) item.node['parameters'].forEach((_, i) => walkHolder(child(item.pointer, 'parameters', i)));
      for (const method of METHODS) if (isObject(item.node[method])) walkOperation(child(item.pointer, method));
    }
  }
  // Components, so that nothing is missed when a component is reached only through another component.
  const components = isObject(doc['components']) ? doc['components'] : {};
  for (const [type, group] of Object.entries(components)) {
    if (!isObject(group)) continue;
    for (const name of Object.keys(group)) {
      const at = child('', 'components', type, name);
      if (type === 'schemas') walkSchema(at);
      else if (type === 'parameters' || type === 'headers') walkHolder(at);
      else if (type === 'requestBodies') walkHolder(at);
      else if (type === 'responses') {
        walkHolder(at);
        const headers = isObject(group[name]) ? (group[name] as JsonObject)['headers'] : undefined;
        if (isObject(headers)) for (const h of Object.keys(headers)) walkHolder(child(at, 'headers', h));
      }
    }
  }
  return cases;
}

function validateAll(label: string, doc: JsonObject): { count: number; failures: string[] } {
  // strict: false because OpenAPI puts its own keywords (example, discriminator, xml, x-*) in schemas.
  const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false, validateFormats: true });
  addFormats(ajv);
  const id = `https://tis.invalid/${encodeURIComponent(label)}/openapi.json`;
  ajv.addSchema({ ...doc, $id: id });
  const compiled = new Map<string, ValidateFunction>();
  const failures: string[] = [];
  const cases = collectExamples(doc);
  for (const c of cases) {
    let validate = compiled.get(c.schemaPointer);
    if (validate === undefined) {
      try {
        validate = ajv.compile({ $ref: `${id}#${encodeURI(c.schemaPointer)}` });
      } catch (error) {
        failures.push(`${c.where}: cannot compile the schema at ${c.schemaPointer}: ${String(error)}`);
        continue;
      }
      compiled.set(c.schemaPointer, validate);
    }
    if (!validate(c.value)) {
      const why = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`).join('; ');
      failures.push(`${c.where}: ${why}`);
    }
  }
  return { count: cases.length, failures };
}

describe('examples validate against their schemas (JSON Schema 2020-12)', () => {
  for (const api of apis) {
    it(`${api.name}: generated/${api.name}/openapi.json`, () => {
      const { count, failures } = validateAll(api.name, readJson(generatedPath(api, 'openapi.json')));
      expect(count, 'a spec with no examples at all means the walk found nothing').toBeGreaterThan(0);
      expect(failures).toEqual([]);
    });
    if (api.contract) {
      it(`${api.name}: generated/${api.name}/tool-openapi.json`, () => {
        const file = generatedPath(api, 'tool-openapi.json');
        expect(existsSync(file), `${file} is missing; run \`npm run generate\``).toBe(true);
        const { count, failures } = validateAll(`${api.name}-tool`, readJson(file));
        expect(count).toBeGreaterThan(0);
        expect(failures).toEqual([]);
      });
    }
  }

  it('the walk reports a wrong example with its location', () => {
    const doc: JsonObject = {
      openapi: '3.1.0',
      info: { title: 't', version: '1' },
      paths: {
        '/things': {
          post: {
            requestBody: {
              content: {
                'application/json': {
                  schema: { $ref: '#/components/schemas/Thing' },
                  examples: { good: { value: { n: 1 } }, bad: { $ref: '#/components/examples/Bad' } },
                },
              },
            },
            responses: { '200': { description: 'ok', content: { 'application/json': { schema: { type: 'string' }, example: 5 } } } },
          },
        },
      },
      components: {
        schemas: { Thing: { type: 'object', required: ['n'], properties: { n: { type: 'integer', examples: [2, 'x'] } } } },
        examples: { Bad: { value: { m: 1 } } },
      },
    };
    const { count, failures } = validateAll('synthetic', doc);
    expect(count).toBe(5);
    expect(failures).toHaveLength(3);
    expect(failures.join('\n')).toContain('/paths/~1things/post/requestBody/content/application~1json/examples/bad (/components/examples/Bad)');
    expect(failures.join('\n')).toContain('/paths/~1things/post/responses/200/content/application~1json/example');
    expect(failures.join('\n')).toContain('/components/schemas/Thing/properties/n/examples/1');
  });
});
