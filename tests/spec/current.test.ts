/**
 * The current contract (2026-09-21 with the 2026-10-05 additions) as the spec states it. The spec is bundled
 * here with @redocly/openapi-core, so this test does not depend on `npm run generate`; every assertion names a
 * concrete rule of the contract or of docs/decisions/ and fails if the spec drifts from it.
 */
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundle, createConfig } from '@redocly/openapi-core';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// Both packages are CommonJS with a `default` export; under NodeNext the default import is the module object.
type AjvClass = typeof import('ajv/dist/2020.js').default;
const Ajv2020: AjvClass = (Ajv2020Module as unknown as { default?: AjvClass }).default ?? (Ajv2020Module as unknown as AjvClass);
type AddFormats = typeof import('ajv-formats').default;
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);

// The bundle is plain JSON of unknown shape; `any` keeps the walking code readable, and every value read is asserted.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Node = any;

const ROOT = fileURLToPath(new URL('../../openapi/2026-09-21/openapi.yaml', import.meta.url));
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

let doc: Node;
let ajv: InstanceType<AjvClass>;

function deref(node: Node): Node {
  let current = node;
  const seen = new Set<string>();
  while (current && typeof current === 'object' && typeof current.$ref === 'string') {
    const ref: string = current.$ref;
    if (!ref.startsWith('#/') || seen.has(ref)) throw new Error(`unexpected $ref ${ref}`);
    seen.add(ref);
    current = ref
      .slice(2)
      .split('/')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((obj: Node, key) => (obj === undefined ? undefined : obj[key]), doc);
  }
  return current;
}

interface Operation {
  where: string;
  method: string;
  op: Node;
}

function operations(): Operation[] {
  const out: Operation[] = [];
  for (const [group, items] of [
    ['paths', doc.paths],
    ['webhooks', doc.webhooks],
  ] as const) {
    for (const [key, rawItem] of Object.entries<Node>(items ?? {})) {
      const item = deref(rawItem);
      for (const method of METHODS) {
        if (item[method]) out.push({ where: `${group}:${key}`, method, op: item[method] });
      }
    }
  }
  return out;
}

function operation(operationId: string): Node {
  const found = operations().filter((o) => o.op.operationId === operationId);
  expect(found, `operation ${operationId}`).toHaveLength(1);
  return found[0]!.op;
}

function pathOf(operationId: string): string {
  const found = operations().find((o) => o.op.operationId === operationId);
  if (!found) throw new Error(`no operation ${operationId}`);
  return found.where;
}

/** The problem examples of one response: `{name, status, detail}` of each. */
function problems(operationId: string, status: string): { name: string; status: number; detail: string }[] {
  const response = deref(operation(operationId).responses?.[status]);
  expect(response, `${operationId} ${status}`).toBeDefined();
  const media = response.content?.['application/problem+json'];
  expect(media, `${operationId} ${status} application/problem+json`).toBeDefined();
  expect(deref(media.schema).title).toBe('Problem');
  return Object.entries<Node>(media.examples ?? {}).map(([name, ex]) => {
    const value = deref(ex).value;
    return { name, status: value.status, detail: value.detail };
  });
}

function details(operationId: string, status: string): string[] {
  return problems(operationId, status).map((p) => p.detail);
}

function schema(name: string): Node {
  const s = doc.components.schemas[name];
  expect(s, `schema ${name}`).toBeDefined();
  return s;
}

function validator(name: string) {
  return ajv.getSchema(`doc#/components/schemas/${name}`) ?? ajv.compile({ $ref: `doc#/components/schemas/${name}` });
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

beforeAll(async () => {
  // An empty config on purpose: the bundle must not depend on the project's lint rules or decorators.
  const config = await createConfig({});
  const result = await bundle({ ref: ROOT, config, dereference: false });
  const errors = result.problems.filter((p) => p.severity === 'error');
  expect(errors.map((p) => p.message)).toEqual([]);
  doc = JSON.parse(JSON.stringify(result.bundle.parsed));
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat('binary', true);
  ajv.addSchema(doc, 'doc');
});

describe('the document', () => {
  it('is OpenAPI 3.1 for contract 2026-09-21, served from the origin with /v1 in the paths (L-01)', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.title).toBe('Tool Integration Service');
    expect(doc.info.version).toBe('2026-09-21');
    expect(doc.info.license?.name).toBeTruthy();
    expect(doc.servers).toEqual([expect.objectContaining({ url: 'https://tis.example.edu' })]);
    for (const path of Object.keys(doc.paths)) {
      // The embedded stores' upload target is outside the API on purpose (L-05, OBJ-02).
      expect(path, path).toMatch(/^(\/v1\/|\/account\/v1\/|\/\.well-known\/jwks\.json$|\/uploads$)/);
    }
  });

  it('tells a tool team the base URL, the credentials, contract selection and the error envelope', () => {
    const text: string = doc.info.description;
    expect(text).toContain('`{base_url}`');
    expect(text).toContain('/v1');
    expect(text).toContain('Contract-Version');
    expect(text).toContain('unknown Contract-Version "X"; served versions: 2026-09-21, 2026-08-25, 2026-08-19');
    expect(text).toContain('application/problem+json');
    expect(text).toMatch(/api\.token/);
    expect(text).toMatch(/launch_data/);
  });

  it('has exactly the six tags, each described, and every operation has one of them', () => {
    const names = doc.tags.map((t: Node) => t.name);
    expect(names).toEqual(['Scores', 'Storage', 'Files', 'Provisioning', 'Keys', 'Tool endpoints']);
    for (const t of doc.tags) expect(t.description, t.name).toBeTruthy();
    for (const { where, method, op } of operations()) {
      expect(op.tags, `${method} ${where}`).toHaveLength(1);
      expect(names, `${method} ${where}`).toContain(op.tags[0]);
      expect(op.summary, `${method} ${where}`).toBeTruthy();
      expect(op.operationId, `${method} ${where}`).toMatch(/^[a-z][A-Za-z0-9]*$/);
    }
  });

  it('lists exactly the current paths: storage rows (L-02), files, scores (L-03), provision (L-04), transfer (L-05), keys (L-06)', () => {
    const rows = [
      '/v1/contexts/{context_id}/apps/{app_id}',
      '/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}',
      '/v1/contexts/{context_id}/apps/{app_id}/members/{member_id}',
      '/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/members/{member_id}',
    ];
    const expected = [
      '/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/members/{member_id}/scores',
      '/account/v1/users/{member_id}/apps/{app_id}/contexts/{context_id}/locations/{location_id}/scores',
      ...rows.flatMap((r) => [`${r}/storage`, `${r}/files`, `${r}/files/{key}`]),
      '/uploads',
      '/v1/downloads/{download_token}',
      '/v1/contexts/{context_id}/apps/{app_id}/provision',
      '/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/provision',
      '/.well-known/jwks.json',
    ];
    expect(Object.keys(doc.paths).sort()).toEqual(expected.sort());
  });

  it('does not list the removed endpoints, and says they answer 404 (L-07)', () => {
    for (const path of Object.keys(doc.paths)) {
      expect(path).not.toMatch(/^\/v1\/grades/);
      expect(path).not.toMatch(/^\/v1\/apps\/me/);
    }
    const text: string = doc.info.description;
    expect(text).toContain('/v1/grades');
    expect(text).toContain('/v1/grades/{grade_id}');
    expect(text).toContain('/v1/apps/me');
    expect(text).toMatch(/answer 404/);
  });

  it('gives every problem example the status of the response it belongs to', () => {
    let seen = 0;
    for (const { where, method, op } of operations()) {
      for (const [status, raw] of Object.entries<Node>(op.responses ?? {})) {
        const media = deref(raw).content?.['application/problem+json'];
        for (const [name, ex] of Object.entries<Node>(media?.examples ?? {})) {
          seen++;
          expect(deref(ex).value.status, `${method} ${where} ${status} ${name}`).toBe(Number(status));
        }
      }
    }
    expect(seen).toBeGreaterThan(100);
  });

  it('gives every operation at least one 4xx response', () => {
    for (const { where, method, op } of operations()) {
      expect(Object.keys(op.responses).some((s) => /^4/.test(s)), `${method} ${where}`).toBe(true);
    }
  });
});

describe('security of each operation', () => {
  it('accepts the API key on submitScore only, with api.token as the alternative', () => {
    expect(operation('submitScore').security).toEqual([{ apiKey: [] }, { apiToken: [] }]);
    const withKey = operations().filter(({ op }) => (op.security ?? []).some((req: Node) => 'apiKey' in req));
    expect(withKey.map(({ op }) => op.operationId)).toEqual(['submitScore']);
  });

  it('accepts only api.token on the account score form, storage, files and provision', () => {
    const tokenOnly = [
      'submitScoreAsUser',
      ...['Context', 'Location', 'Member', 'MemberLocation'].flatMap((row) => [
        `get${row}Row`,
        `put${row}Row`,
        `patch${row}Row`,
        `list${row}Files`,
        `get${row}File`,
        `put${row}File`,
        `delete${row}File`,
      ]),
      'provisionContext',
      'provisionLocation',
    ];
    for (const id of tokenOnly) expect(operation(id).security, id).toEqual([{ apiToken: [] }]);
  });

  it('needs no credential on the upload target, signed downloads, the JWKS and the tool endpoints', () => {
    for (const id of ['uploadFile', 'downloadFile', 'getPublicKeys', 'toolLaunch', 'toolProvision', 'toolLocations']) {
      expect(operation(id).security, id).toEqual([]);
    }
  });

  it('declares both schemes as bearer', () => {
    const schemes = doc.components.securitySchemes;
    expect(Object.keys(schemes).sort()).toEqual(['apiKey', 'apiToken']);
    expect(deref(schemes.apiKey)).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(deref(schemes.apiToken)).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});

describe('score submission', () => {
  it('posts to both URL forms (L-03)', () => {
    expect(pathOf('submitScore')).toBe(
      'paths:/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/members/{member_id}/scores',
    );
    expect(pathOf('submitScoreAsUser')).toBe(
      'paths:/account/v1/users/{member_id}/apps/{app_id}/contexts/{context_id}/locations/{location_id}/scores',
    );
    for (const id of ['submitScore', 'submitScoreAsUser']) {
      expect(operation(id).tags).toEqual(['Scores']);
      expect(deref(operation(id).requestBody).content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/ScoreSubmission',
      });
    }
  });

  it('takes a ScoreSubmission: score 0..1 required, max_score > 0, defaults, no other field (GAP-22)', () => {
    const s = schema('ScoreSubmission');
    expect(s.required).toEqual(['score']);
    expect(s.additionalProperties).toBe(false);
    expect(Object.keys(s.properties).sort()).toEqual(
      ['activity_progress', 'comment', 'grading_progress', 'max_score', 'score'].sort(),
    );
    expect(deref(s.properties.score)).toMatchObject({ type: 'number', minimum: 0, maximum: 1 });
    expect(s.properties.max_score).toMatchObject({ type: 'number', exclusiveMinimum: 0 });
    expect(s.properties.comment).toMatchObject({ type: 'string', default: '' });
    expect(deref(s.properties.activity_progress)).toMatchObject({ enum: ['Completed', 'Submitted'], default: 'Completed' });
    expect(deref(s.properties.grading_progress)).toMatchObject({ enum: ['FullyGraded', 'Pending'], default: 'FullyGraded' });

    const v = validator('ScoreSubmission');
    expect(v({ score: 0 })).toBe(true);
    expect(v({ score: 1, max_score: 0.5 })).toBe(true);
    expect(v({ score: 1.01 })).toBe(false);
    expect(v({ score: -0.01 })).toBe(false);
    expect(v({ score: 0.5, max_score: 0 })).toBe(false);
    expect(v({ score: '0.5' })).toBe(false);
    expect(v({ max_score: 10 })).toBe(false);
    expect(v({ score: 0.5, points: 10 })).toBe(false);
    expect(v({ score: 0.5, activity_progress: 'Started' })).toBe(false);
  });

  it('answers 200 with a GradeAttempt carrying every field of the contract table', () => {
    for (const id of ['submitScore', 'submitScoreAsUser']) {
      expect(deref(operation(id).responses['200']).content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/GradeAttempt',
      });
    }
    const s = schema('GradeAttempt');
    const fields = ['id', 'status', 'score', 'max_score', 'activity_progress', 'grading_progress', 'submitted', 'member', 'location', 'app', 'context', 'data'];
    expect([...s.required].sort()).toEqual([...fields].sort());
    expect(Object.keys(s.properties).sort()).toEqual([...fields].sort());
    expect(s.properties.status.enum).toEqual(['success', 'failed']);
    expect(s.properties.max_score.type).toEqual(['number', 'null']);
    expect(s.properties.submitted.format).toBe('date-time');
    const data = s.properties.data;
    expect([...data.required].sort()).toEqual(['comment', 'error', 'response', 'source_id', 'source_type']);
    expect(data.properties.source_type.enum).toEqual(['session', 'api_key']);
    expect(s.description).toMatch(/never updated/);
    expect(s.properties.submitted.description).toMatch(/strictly\s+later/);

    const v = validator('GradeAttempt');
    const ok = clone(deref(operation('submitScore').responses['200']).content['application/json'].examples);
    const success = deref(ok.AttemptSuccess).value;
    expect(v(success)).toBe(true);
    expect(v({ ...success, data: { ...success.data, response: { status: 200 } } })).toBe(false);
    expect(v({ ...success, data: { ...success.data, source_type: 'api_key' } })).toBe(false);
    expect(v({ ...success, status: 'failed' })).toBe(false);
  });

  it('shows a success, an LMS refusal, a placement with no line item and max_score without the scope as 200s', () => {
    const examples = deref(operation('submitScore').responses['200']).content['application/json'].examples;
    const values = Object.values<Node>(examples).map((e) => deref(e).value);
    expect(values.some((a) => a.status === 'success' && a.data.error === '')).toBe(true);
    expect(values.some((a) => a.status === 'failed' && a.data.response !== null && a.data.response.status >= 400)).toBe(true);
    expect(values.some((a) => a.status === 'failed' && a.data.response === null && /no line item/.test(a.data.error))).toBe(true);
    expect(values.some((a) => a.status === 'failed' && a.max_score !== null && /line-item scope/.test(a.data.error))).toBe(true);
  });

  it('names every 422 of the grade table with its exact message (NS-20, GAP-22)', () => {
    for (const id of ['submitScore', 'submitScoreAsUser']) {
      const list = details(id, '422');
      expect(list).toEqual(
        expect.arrayContaining([
          'score must be between 0 and 1',
          'max_score must be greater than 0',
          'activity_progress must be one of [Completed, Submitted]',
          'grading_progress must be one of [FullyGraded, Pending]',
          'grade passback is only allowed for assessment locations',
          'score is required',
          'score must be a number',
        ]),
      );
      expect(list.some((d) => /^unknown field: \S+$/.test(d)), id).toBe(true);
    }
  });

  it('names the 401 messages (NS-21): the API-key refusal only on the account form', () => {
    const common = ['Missing Bearer API key', 'Invalid bearer token', 'Expired bearer token'];
    const refusal = 'API key is not accepted on this URL; use the api.token of a launch';
    const contexts = details('submitScore', '401');
    const account = details('submitScoreAsUser', '401');
    expect(contexts).toEqual(expect.arrayContaining([...common, 'Invalid API key']));
    expect(account).toEqual(expect.arrayContaining([...common, refusal]));
    expect(contexts).not.toContain(refusal);
    for (const list of [contexts, account]) expect(list.some((d) => /^tool \S+ is suspended$/.test(d))).toBe(true);
  });

  it('names the 403 messages (contract table, NS-16, GAP-21)', () => {
    const contexts = details('submitScore', '403');
    const account = details('submitScoreAsUser', '403');
    expect(contexts.some((d) => /^API key is for tool app_\w+, not tool app_\w+$/.test(d))).toBe(true);
    expect(account.some((d) => /^API key is for tool/.test(d))).toBe(false);
    for (const list of [contexts, account]) {
      expect(list.some((d) => /^tool app_\w+ has no placement of location loc_\w+ in context ctx_\w+$/.test(d))).toBe(true);
      expect(list).toContain("a student's session may only submit scores for its own member");
      expect(list.some((d) => /^the session's user is not a member of context ctx_\w+$/.test(d))).toBe(true);
    }
  });

  it('answers 404 for a member segment naming no member of the course (GAP-21), and 400, 413, 415', () => {
    for (const id of ['submitScore', 'submitScoreAsUser']) {
      expect(details(id, '404').some((d) => /^member mem_\w+ is not a member of context ctx_\w+$/.test(d))).toBe(true);
      expect(details(id, '415')).toContain('Content-Type must be application/json');
      expect(problems(id, '400')).not.toHaveLength(0);
      expect(problems(id, '413')).not.toHaveLength(0);
    }
  });
});

describe('files (2026-10-05)', () => {
  const rows = ['Context', 'Location', 'Member', 'MemberLocation'] as const;
  const keyError = "invalid file key: 1 to 128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit";

  it('offers list, read, ask-to-store and delete on each row at the L-02 files URLs', () => {
    const base: Record<(typeof rows)[number], string> = {
      Context: '/v1/contexts/{context_id}/apps/{app_id}/files',
      Location: '/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/files',
      Member: '/v1/contexts/{context_id}/apps/{app_id}/members/{member_id}/files',
      MemberLocation: '/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/members/{member_id}/files',
    };
    for (const row of rows) {
      expect(pathOf(`list${row}Files`)).toBe(`paths:${base[row]}`);
      for (const id of [`get${row}File`, `put${row}File`, `delete${row}File`]) {
        expect(pathOf(id)).toBe(`paths:${base[row]}/{key}`);
        expect(operation(id).tags).toEqual(['Files']);
      }
      expect(deref(operation(`list${row}Files`).responses['200']).content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/FileList',
      });
      expect(Object.keys(operation(`delete${row}File`).responses)).toContain('204');
      expect(operation(`delete${row}File`).responses['200']).toBeUndefined();
    }
  });

  it('restricts keys to the contract rule, case-sensitive ASCII (GAP-03, GAP-36)', () => {
    expect(schema('FileKey').pattern).toBe('^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$');
    const param = deref(doc.components.parameters.FileKey);
    expect(param).toMatchObject({ name: 'key', in: 'path', required: true });
    const v = validator('FileKey');
    for (const good of ['a', 'Report.PDF', 'lab-report_week3.v2', '9', 'a'.repeat(128)]) expect(v(good), good).toBe(true);
    for (const bad of ['', '.hidden', '-x', '_x', 'a'.repeat(129), 'ä.txt', 'a/b', 'a b']) expect(v(bad), bad).toBe(false);
  });

  it('answers 422 with the key message on every method that takes a key (GAP-03)', () => {
    for (const row of rows) {
      for (const id of [`get${row}File`, `put${row}File`, `delete${row}File`]) {
        expect(details(id, '422'), id).toContain(keyError);
      }
    }
  });

  it('lists {key, size, modified} and reads {key, size, modified, content_type, url, expires}', () => {
    expect(schema('FileSummary').required).toEqual(['key', 'size', 'modified']);
    expect(schema('FileSummary').additionalProperties).toBe(false);
    expect([...schema('FileDetail').required].sort()).toEqual(['content_type', 'expires', 'key', 'modified', 'size', 'url']);
    expect(schema('FileList')).toMatchObject({ type: 'array', maxItems: 100 });
    expect(schema('FileDetail').properties.expires.description).toMatch(/5 minutes/);
    for (const row of rows) {
      expect(details(`get${row}File`, '404').some((d) => /^no file with key \S+ in this row$/.test(d))).toBe(true);
    }
  });

  it('asks to store with {size <= 25 MB, mimetype, filename, attachment=false} and answers 200 {url, fields} (GAP-02, GAP-04)', () => {
    const s = schema('FileUploadRequest');
    expect(s.required).toEqual(['size']);
    expect(s.properties.size).toMatchObject({ type: 'integer', minimum: 0, maximum: 26214400 });
    expect(s.properties.attachment).toMatchObject({ type: 'boolean', default: false });
    expect(Object.keys(s.properties).sort()).toEqual(['attachment', 'filename', 'mimetype', 'size']);
    const v = validator('FileUploadRequest');
    expect(v({ size: 26214400 })).toBe(true);
    expect(v({ size: 26214401 })).toBe(false);
    expect(v({ size: 1.5 })).toBe(false);

    const form = schema('UploadForm');
    expect(form.required).toEqual(['url', 'fields']);
    // Opaque to tools: the embedded stores' policy and signature, or a bucket's presigned POST (OBJ-02).
    expect(form.properties.fields.required).toBeUndefined();
    expect(form.properties.fields.additionalProperties).toEqual({ type: 'string' });
    expect(form.properties.fields.minProperties).toBe(1);
    for (const row of rows) {
      const put = operation(`put${row}File`);
      expect(deref(put.requestBody).content['application/json'].schema).toEqual({ $ref: '#/components/schemas/FileUploadRequest' });
      expect(deref(put.responses['200']).content['application/json'].schema).toEqual({ $ref: '#/components/schemas/UploadForm' });
      expect(put.responses['204']).toBeUndefined();
      const list = details(`put${row}File`, '422');
      expect(list).toContain('size must be at most 26214400 bytes (25 MB)');
      expect(list.some((d) => /100 files/.test(d))).toBe(true);
      expect(list.some((d) => /104857600 bytes \(100 MB\)/.test(d))).toBe(true);
    }
  });

  it('refuses file operations on an unprovisioned context or location level, never on member rows', () => {
    const unprovisioned = (d: string) => /is not provisioned yet/.test(d);
    for (const row of ['Context', 'Location']) {
      for (const id of [`list${row}Files`, `get${row}File`, `put${row}File`, `delete${row}File`]) {
        expect(details(id, '422').some(unprovisioned), id).toBe(true);
      }
    }
    for (const row of ['Member', 'MemberLocation']) {
      expect(operation(`list${row}Files`).responses['422']).toBeUndefined();
      for (const id of [`get${row}File`, `put${row}File`, `delete${row}File`]) {
        expect(details(id, '422').some(unprovisioned), id).toBe(false);
      }
    }
  });

  it('applies the row rules to files: same 401, 403 and 404 responses as the row', () => {
    const rowOf: Record<(typeof rows)[number], string> = {
      Context: 'getContextRow',
      Location: 'getLocationRow',
      Member: 'getMemberRow',
      MemberLocation: 'getMemberLocationRow',
    };
    for (const row of rows) {
      const rowOp = operation(rowOf[row]);
      for (const id of [`list${row}Files`, `put${row}File`, `delete${row}File`]) {
        for (const status of ['401', '403', '404']) {
          expect(operation(id).responses[status], `${id} ${status}`).toEqual(rowOp.responses[status]);
        }
      }
      expect(details(`put${row}File`, '401')).toContain('API key is not accepted on this URL; use the api.token of a launch');
    }
  });

  it('uploads a multipart form to /uploads (outside the API, L-05): fields, then file; 204; the GAP-05 refusals', () => {
    const up = operation('uploadFile');
    expect(pathOf('uploadFile')).toBe('paths:/uploads');
    const media = deref(up.requestBody).content['multipart/form-data'];
    expect(media).toBeDefined();
    expect(Object.keys(deref(up.requestBody).content)).toEqual(['multipart/form-data']);
    expect([...deref(media.schema).required].sort()).toEqual(['file', 'policy', 'signature']);
    expect(Object.keys(deref(media.schema).properties)).toEqual(['policy', 'signature', 'file']);
    expect(Object.keys(up.responses)).toContain('204');
    expect(details('uploadFile', '403')).toEqual(expect.arrayContaining(['upload form expired', 'invalid upload signature']));
    expect(details('uploadFile', '422')).toContain('uploaded size does not match the signed size');
    expect(details('uploadFile', '422').length).toBeGreaterThanOrEqual(3);
    expect(problems('uploadFile', '413')).not.toHaveLength(0);
    expect(up.description).toMatch(/exact size/);
    expect(up.description).toMatch(/only when the new upload completes/);
  });

  it('downloads with a signed URL: bytes with Content-Type and Content-Disposition, 403 and 404', () => {
    const down = operation('downloadFile');
    expect(pathOf('downloadFile')).toBe('paths:/v1/downloads/{download_token}');
    const ok = deref(down.responses['200']);
    expect(Object.keys(ok.headers)).toEqual(expect.arrayContaining(['Content-Type', 'Content-Disposition']));
    expect(ok.headers['Content-Disposition'].description).toMatch(/attachment/);
    expect(ok.headers['Content-Disposition'].description).toMatch(/inline/);
    expect(details('downloadFile', '403').length).toBeGreaterThanOrEqual(2);
    expect(problems('downloadFile', '404')).toHaveLength(1);
  });
});

describe('launch, provision and locations claims', () => {
  it('LaunchClaims carries every claim of the contract table plus aud and jti, and nothing else', () => {
    const s = schema('LaunchClaims');
    const claims = ['iat', 'exp', 'iss', 'aud', 'jti', 'api', 'app', 'context', 'course', 'organization', 'user', 'launch_id', 'location', 'resource_link', 'grade', 'storage', 'files', 'provision'];
    expect([...s.required].sort()).toEqual([...claims].sort());
    expect(Object.keys(s.properties).sort()).toEqual([...claims].sort());
    expect(s.additionalProperties).toBe(false);
    expect(s.properties.test).toBeUndefined();
    expect(s.properties.grade_passback).toBeUndefined();
    expect(s.properties.grade['x-replaces']).toBe('grade_passback');
    expect(Object.keys(s.properties.grade.properties)).toEqual(['submit']);
    expect(s.properties.grade.properties.submit.type).toEqual(['string', 'null']);
    expect(Object.keys(s.properties.api.properties).sort()).toEqual(['domain', 'token']);
    expect(Object.keys(schema('CourseClaim').properties).sort()).toEqual(['label', 'name']);
    expect(schema('CourseClaim').properties.label.type).toEqual(['string', 'null']);
    expect(Object.keys(schema('OrganizationClaim').properties).sort()).toEqual(['client', 'deployment', 'issuer', 'title']);
    const location = schema('LocationClaim');
    expect(Object.keys(location.properties).sort()).toEqual(['extid', 'id', 'label', 'type']);
    expect(location.additionalProperties).toBe(false);
    expect(location.properties.params).toBeUndefined();
    const user = s.properties.user;
    expect(Object.keys(user.properties).sort()).toEqual(['email', 'family_name', 'full_name', 'given_name', 'groups', 'id', 'member']);
    expect(user.properties.groups.items.enum).toEqual(['student', 'instructor', 'assistant', 'manager']);
    expect(user.properties.email.type).toEqual(['string', 'null']);
    for (const key of ['storage', 'files']) {
      expect(Object.keys(s.properties[key].properties).sort(), key).toEqual(['context', 'location', 'member', 'member_location']);
    }
    expect(Object.keys(s.properties.provision.properties).sort()).toEqual(['context', 'location']);
    expect(s.properties.resource_link.maxLength).toBe(255);
  });

  it('LaunchClaims enforces the staff-only personal data rule and grade.submit null for non-assessments', () => {
    const v = validator('LaunchClaims');
    const [student, instructor] = clone(schema('LaunchClaims').examples) as Node[];
    expect(v(student)).toBe(true);
    expect(v(instructor)).toBe(true);
    expect(v({ ...student, user: { ...student.user, full_name: 'Sam Lee' } })).toBe(false);
    expect(v({ ...student, user: { ...student.user, email: 'sam@example.edu' } })).toBe(false);
    expect(v({ ...student, user: { ...student.user, groups: ['student', 'assistant'], full_name: 'Sam Lee' } })).toBe(true);
    expect(v({ ...student, user: { ...student.user, groups: ['teacher'] } })).toBe(false);
    expect(v({ ...student, location: { ...student.location, type: 'practice' } })).toBe(false);
    expect(v({ ...student, location: { ...student.location, params: {} } })).toBe(false);
    expect(v({ ...student, test: true })).toBe(false);
    expect(v({ ...student, grade: { submit: null } })).toBe(true);
  });

  it('ProvisionClaims is exactly the NS-06 set, with the course-level nulls', () => {
    const s = schema('ProvisionClaims');
    const claims = ['iat', 'exp', 'iss', 'aud', 'jti', 'api', 'app', 'context', 'course', 'organization', 'location', 'storage', 'files', 'provision'];
    expect([...s.required].sort()).toEqual([...claims].sort());
    expect(Object.keys(s.properties).sort()).toEqual([...claims].sort());
    expect(s.additionalProperties).toBe(false);
    for (const absent of ['user', 'launch_id', 'resource_link', 'grade']) expect(s.properties[absent], absent).toBeUndefined();
    expect(Object.keys(s.properties.storage.properties).sort()).toEqual(['context', 'location', 'parent_context', 'parent_location']);
    expect([...s.properties.storage.required].sort()).toEqual(['context', 'location']);
    expect(Object.keys(s.properties.files.properties).sort()).toEqual(['context', 'location']);
    const v = validator('ProvisionClaims');
    const [course, copiedLocation] = clone(s.examples) as Node[];
    expect(v(course)).toBe(true);
    expect(v(copiedLocation)).toBe(true);
    expect(v({ ...course, storage: { ...course.storage, location: copiedLocation.storage.location } })).toBe(false);
    expect(v({ ...course, storage: { ...course.storage, parent_location: copiedLocation.storage.parent_location } })).toBe(false);
    expect(v({ ...copiedLocation, provision: { ...copiedLocation.provision, location: null } })).toBe(false);
    expect(v({ ...course, user: { id: 'usr_4b7d0f3h6k9m2p5r8t1v' } })).toBe(false);
    expect(v({ ...course, launch_id: 'lch_1a4c7e0g3j6l9n2q5s8u' })).toBe(false);
  });

  it('LocationsClaims has only the locations-request claims, api.token null and every user field nullable', () => {
    const s = schema('LocationsClaims');
    const claims = ['iat', 'exp', 'iss', 'aud', 'jti', 'api', 'app', 'context', 'organization', 'user'];
    expect([...s.required].sort()).toEqual([...claims].sort());
    expect(Object.keys(s.properties).sort()).toEqual([...claims].sort());
    expect(s.additionalProperties).toBe(false);
    for (const absent of ['launch_id', 'location', 'course', 'resource_link', 'storage', 'files', 'provision', 'grade', 'params', 'test']) {
      expect(s.properties[absent], absent).toBeUndefined();
    }
    expect(s.properties.api.properties.token.type).toBe('null');
    for (const [name, field] of Object.entries<Node>(s.properties.user.properties)) {
      expect(field.type, name).toContain('null');
    }
    const v = validator('LocationsClaims');
    const [instructor, anonymous] = clone(s.examples) as Node[];
    expect(v(instructor)).toBe(true);
    expect(v(anonymous)).toBe(true);
    expect(v({ ...anonymous, user: { ...anonymous.user, email: 'x@example.edu' } })).toBe(false);
    expect(v({ ...instructor, api: { ...instructor.api, token: 'tis_at_Qm7vX2pL9kR4tW8yB1nC6dF3gH5jK0sZ2aE7uV9xY4c' } })).toBe(false);
    expect(v({ ...instructor, launch_id: 'lch_1a4c7e0g3j6l9n2q5s8u' })).toBe(false);
  });
});

describe('the three requests the service sends a tool', () => {
  const hooks = { launch: 'toolLaunch', provision: 'toolProvision', locations: 'toolLocations' } as const;
  const claimsOf = { launch: 'LaunchClaims', provision: 'ProvisionClaims', locations: 'LocationsClaims' } as const;

  it('are webhooks posting a launch_data JWT form whose payload is the matching claim set', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual(['launch', 'locations', 'provision']);
    for (const [name, id] of Object.entries(hooks) as [keyof typeof hooks, string][]) {
      const op = deref(doc.webhooks[name]).post;
      expect(op.operationId).toBe(id);
      expect(op.tags).toEqual(['Tool endpoints']);
      const body = deref(op.requestBody).content;
      expect(Object.keys(body)).toEqual(['application/x-www-form-urlencoded']);
      const form = deref(body['application/x-www-form-urlencoded'].schema);
      expect(form.required).toEqual(['launch_data']);
      expect(form.properties.launch_data.contentSchema).toEqual({ $ref: `#/components/schemas/${claimsOf[name]}` });
      expect(op.description).toContain(claimsOf[name]);
      expect(op.description).toMatch(/RS256/);
      expect(op.description).toMatch(/kid/);
      expect(op.description).toMatch(/jwks\.json/);
      expect(op.description).toMatch(/300 seconds/);
      expect(Object.keys(op.responses).some((s) => /^4/.test(s)), name).toBe(true);
      // Each example token decodes to a payload that satisfies the claim schema.
      const v = validator(claimsOf[name]);
      const examples = Object.values<Node>(body['application/x-www-form-urlencoded'].examples).map((e) => deref(e).value);
      expect(examples.length).toBeGreaterThan(0);
      for (const ex of examples) {
        const [header, payload] = (ex.launch_data as string).split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
        expect(header).toMatchObject({ alg: 'RS256', typ: 'JWT' });
        expect(header.kid).toBeTruthy();
        expect(v(payload), JSON.stringify(v.errors)).toBe(true);
        expect(payload.exp - payload.iat).toBe(300);
      }
    }
  });

  it('expect 200 text/html from a launch, 204 from a provision request and a LocationsResponse from a locations request', () => {
    expect(Object.keys(operation('toolLaunch').responses['200'].content)).toEqual(['text/html']);
    expect(Object.keys(operation('toolProvision').responses)).toContain('204');
    expect(operation('toolProvision').description).toMatch(/10 seconds/);
    expect(operation('toolProvision').description).toMatch(/Any 2xx/);
    expect(operation('toolLocations').responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/LocationsResponse',
    });
  });

  it('documents every row of the locations failure table with its exact message', () => {
    const text: string = operation('toolLocations').description;
    for (const message of [
      'app connection timeout',
      'app connection failure',
      'app failed to provide the available locations',
      'the app redirected the locations request; locations_url must name the endpoint itself',
      'the app returned invalid JSON',
      'the app returned an invalid locations structure',
      'the app nested location groups more than 5 levels deep',
      'the app returned a location group with an empty label',
      'App does not have a locations_url configured',
    ]) {
      expect(text, message).toContain(`\`${message}`);
    }
  });
});

describe('the locations response', () => {
  const entry = { type: 'content', label: 'Reading' };
  function nested(depth: number): Node {
    let group: Node = { label: `Level ${depth}` };
    for (let level = depth - 1; level >= 1; level--) group = { label: `Level ${level}`, grouped_locations: [group] };
    return { grouped_locations: [group] };
  }

  it('needs at least one of locations, grouped_locations and message, and ignores unknown keys (GAP-09)', () => {
    const s = schema('LocationsResponse');
    expect(s.anyOf).toEqual([{ required: ['locations'] }, { required: ['grouped_locations'] }, { required: ['message'] }]);
    expect(s.additionalProperties).toBeUndefined();
    const v = validator('LocationsResponse');
    expect(v({})).toBe(false);
    expect(v({ extra: true })).toBe(false);
    expect(v({ message: 'Nothing yet' })).toBe(true);
    expect(v({ locations: {} })).toBe(true);
    expect(v({ grouped_locations: [] })).toBe(true);
    expect(v({ message: 'x', extra: true, locations: { a: { ...entry, colour: 'red' } } })).toBe(true);
    expect(v({ message: 42 })).toBe(false);
  });

  it('keys entries by extid (1 to 128 letters, digits, _ and -), type and label required, points > 0 default 100 (GAP-11)', () => {
    expect(schema('LocationMap').propertyNames.pattern).toBe('^[A-Za-z0-9_-]{1,128}$');
    const e = schema('LocationEntry');
    expect([...e.required].sort()).toEqual(['label', 'type']);
    expect(e.properties.points).toMatchObject({ type: 'number', exclusiveMinimum: 0, default: 100 });
    expect(deref(e.properties.type).enum).toEqual(['assessment', 'practice', 'content', 'setup']);
    const v = validator('LocationsResponse');
    expect(v({ locations: { 'week-3_quiz': { ...entry, points: 20 } } })).toBe(true);
    expect(v({ locations: { 'week 3': entry } })).toBe(false);
    expect(v({ locations: { ['x'.repeat(129)]: entry } })).toBe(false);
    expect(v({ locations: { a: { ...entry, points: 0 } } })).toBe(false);
    expect(v({ locations: { a: { label: 'No type' } } })).toBe(false);
    expect(v({ locations: { a: { ...entry, type: 'quiz' } } })).toBe(false);
  });

  it('allows groups nested 5 levels deep and refuses a sixth (GAP-08); a group label is required and non-empty', () => {
    const v = validator('LocationsResponse');
    expect(v(nested(1))).toBe(true);
    expect(v(nested(5))).toBe(true);
    expect(v(nested(6))).toBe(false);
    expect(schema('LocationGroupLevel5').properties.grouped_locations.maxItems).toBe(0);
    expect(v({ grouped_locations: [{ label: '' }] })).toBe(false);
    expect(v({ grouped_locations: [{ description: 'no label' }] })).toBe(false);
    expect(v({ grouped_locations: [{ label: 7 }] })).toBe(false);
    for (const name of ['LocationGroup', 'LocationGroupLevel2', 'LocationGroupLevel3', 'LocationGroupLevel4', 'LocationGroupLevel5']) {
      expect(schema(name).required, name).toEqual(['label']);
      expect(schema(name).properties.label.minLength, name).toBe(1);
      expect(schema(name).additionalProperties, name).toBeUndefined();
    }
  });

  it('documents the server rules: plain text, 200 and 2000 cuts, key order, extid binding', () => {
    const message: string = schema('LocationsResponse').properties.message.description;
    expect(message).toMatch(/2000/);
    expect(message).toMatch(/line breaks/);
    expect(schema('LocationEntry').properties.label.description).toMatch(/200/);
    expect(schema('LocationGroup').properties.label.description).toMatch(/200/);
    expect(schema('LocationsResponse').description).toMatch(/only of digits/);
    const map: string = schema('LocationMap').description;
    expect(map).toMatch(/binds the two\s+permanently/);
    expect(map).toMatch(/only hides it/);
    expect(map).toMatch(/retargets/);
    expect(map).toMatch(/stores a copy/);
  });

  it('shows a response with top-level locations, two groups (one nested) and a message', () => {
    const examples = Object.values<Node>(operation('toolLocations').responses['200'].content['application/json'].examples).map((e) => deref(e).value);
    const full = examples.find(
      (x) => x.message && x.locations && Object.keys(x.locations).length > 0 && x.grouped_locations?.length === 2,
    );
    expect(full).toBeDefined();
    expect(full.grouped_locations.some((g: Node) => Array.isArray(g.grouped_locations) && g.grouped_locations.length > 0)).toBe(true);
  });
});
