/**
 * express-openapi-validator, driven per operation (decision PERF-01).
 *
 * Its own middleware chain matches every request against every route again (compiling a path-to-regexp
 * matcher per route on every request: upstream issue, open PR #1217) after our `OperationRouter` has
 * already matched it, and its start-up compiles the OpenAPI meta-schema and re-bundles each spec, which
 * was most of the service's cold start. Here the library's own request and response validators run
 * unchanged (same Ajv options, same preprocessing, same error objects, so `validation-errors.ts` and the
 * dashboard's mapping rules see exactly what they saw before), but:
 *
 * - the operation comes from the pipeline's one match (`req.openapi` is filled from it, as the library's
 *   metadata step would fill it), so each request is matched once;
 * - the spec is not validated against the OpenAPI meta-schema nor re-bundled at start: `npm run generate`
 *   writes a bundle with local `$ref`s only and `npm run check` lints it, so both were work without effect;
 * - an API's validators are built on its first request, and each operation's Ajv functions on that
 *   operation's first request (the library's own cache), so start-up compiles nothing;
 * - that first request loads only the library's request validator and preprocessor, not its entry module,
 *   and the preprocessing resolves `$ref`s without compiling each schema they name (PERF-34).
 */
import { createRequire } from 'node:module';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { AjvOptions } from 'express-openapi-validator/dist/framework/ajv/options.js';
import type { RequestValidator } from 'express-openapi-validator/dist/middlewares/openapi.request.validator.js';
import type { ResponseValidator } from 'express-openapi-validator/dist/middlewares/openapi.response.validator.js';
import type { SchemaPreprocessor } from 'express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js';
import type { OperationEntry, RouteMatch } from './routes.js';
import { OperationRouter } from './routes.js';

/**
 * Validates one request (and, when on, arms the response validator on `res.json`). `match` is the
 * pipeline's own match of the request; without it the runner matches the request itself, once, with
 * matchers compiled at construction. A response-validation failure surfaces after the handler's
 * `res.json`; it is handed to `lateError`, which answers 500.
 */
export type Runner = (req: Request, res: Response, lateError: (err: unknown) => void, match?: RouteMatch) => Promise<void>;

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** The library's own rule for an Express route of an OpenAPI path (`{id}` → `:id`); a cache key to it. */
const expressRouteOf = (path: string): string => path.split(':').map((part) => part.replace(/\{([^}]+)}/g, ':$1')).join('\\:');

interface OperationSchemas {
  expressRoute: string;
  openApiRoute: string;
  /** The operation object of the preprocessed request document. */
  schema: unknown;
  /** The same operation in the response document (the library keeps a separate copy for responses). */
  responseSchema: unknown;
}

export interface Validators {
  request: RequestValidator;
  response: RequestHandler | null;
  serial: number;
  byOperation: Map<string, OperationSchemas>;
}

interface Library {
  RequestValidator: typeof RequestValidator;
  SchemaPreprocessor: typeof SchemaPreprocessor;
  AjvOptions: typeof AjvOptions;
  defaultSerDes: unknown[];
  /** lodash.get, the library's own dependency: its preprocessor's fallback for a `$ref` Ajv does not hold. */
  get: (object: unknown, path: string) => unknown;
}

let library: Promise<Library> | undefined;
let responseLibrary: Promise<typeof ResponseValidator> | undefined;

/**
 * The parts of the library a request needs (with Ajv and its formats) are loaded by the first request that
 * is validated, not at start (PERF-31); and only those parts: its entry module (`OpenApiValidator`) loads
 * every middleware it has (multer, the security handler, path matching, the spec loader), twice the code,
 * and was only ever used here to normalize the options (PERF-34, `validatorOptions`). The response
 * validator is loaded only where responses are validated (never in production by default).
 */
function loadLibrary(): Promise<Library> {
  library ??= Promise.all([
    import('express-openapi-validator/dist/middlewares/openapi.request.validator.js'),
    import('express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js'),
    import('express-openapi-validator/dist/framework/ajv/options.js'),
    import('express-openapi-validator/dist/framework/base.serdes.js'),
    import('express-openapi-validator/dist/middlewares/parsers/req.parameter.mutator.js'),
    import('express-openapi-validator/dist/middlewares/parsers/util.js'),
  ]).then(([request, preprocessor, options, serdes, mutator, util]) => {
    skipIdleMutations(mutator.RequestParameterMutator.prototype as unknown as MutatorPrototype, util as unknown as ParameterUtil);
    const fromLibrary = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
    return {
      RequestValidator: request.RequestValidator,
      SchemaPreprocessor: preprocessor.SchemaPreprocessor,
      AjvOptions: options.AjvOptions,
      defaultSerDes: serdes.defaultSerDes as unknown[],
      get: fromLibrary('lodash.get') as Library['get'],
    };
  });
  return library;
}

interface ParameterObject {
  in?: string;
  content?: unknown;
  style?: string;
  explode?: boolean;
}

interface MutatorPrototype {
  modifyRequest(this: { ajv: unknown; _apiDocs: unknown }, req: { openapi: { schema: { parameters?: unknown[] } }; originalUrl: string }): void;
}

interface ParameterUtil {
  dereferenceParameter(apiDocs: unknown, parameter: unknown): ParameterObject;
  normalizeParameter(ajv: unknown, parameter: ParameterObject): { schema: { type?: unknown } | undefined };
}

/**
 * The library's request parameter mutator (`RequestParameterMutator.modifyRequest`) rewrites the query
 * string and array- or object-shaped parameters into what Ajv checks; it runs for every request and parses
 * the URL again each time (`url.parse`), a visible share of a GET (PERF-63). For an operation whose
 * parameters are all outside the query, without `content`, of no array or object type and not
 * form-exploded, and a request without a query string, none of its branches changes anything, so it is
 * skipped then. Whether an operation is such is judged, with the library's own functions, after the
 * mutator has run once for it (its normalization sets defaults on the parameter objects, which it keeps).
 */
function skipIdleMutations(proto: MutatorPrototype, util: ParameterUtil): void {
  const original = proto.modifyRequest;
  if ((original as { idleSkipped?: boolean }).idleSkipped) return;
  const idle = new WeakMap<object, boolean>();
  const patched: MutatorPrototype['modifyRequest'] = function modifyRequest(req) {
    const schema = req.openapi.schema;
    const known = idle.get(schema);
    if (known === true && !req.originalUrl.includes('?')) return;
    original.call(this, req);
    if (known === undefined) {
      idle.set(
        schema,
        (schema.parameters ?? []).every((raw) => {
          const parameter = util.dereferenceParameter(this._apiDocs, raw);
          if (parameter.in === 'query' || parameter.content !== undefined) return false;
          const type = util.normalizeParameter(this.ajv, parameter).schema?.type;
          return type !== 'array' && type !== 'object' && !(parameter.style === 'form' && parameter.explode === true);
        }),
      );
    }
  };
  (patched as { idleSkipped?: boolean }).idleSkipped = true;
  proto.modifyRequest = patched;
}

function loadResponseValidator(): Promise<typeof ResponseValidator> {
  responseLibrary ??= import('express-openapi-validator/dist/middlewares/openapi.response.validator.js').then((m) => m.ResponseValidator);
  return responseLibrary;
}

/**
 * The options as the library's `OpenApiValidator` constructor normalizes them (its defaults,
 * `normalizeOptions`: the default serializers for `date` and `date-time`, Ajv's formats in `fast` mode)
 * for the options this service gives it. `tests/server/core/validator-options.test.ts` compares this with
 * what the library itself makes of them, so a library upgrade that changes its normalization is caught.
 */
export function validatorOptions(defaultSerDes: unknown[], responseValidation: boolean): Record<string, unknown> {
  return {
    validateApiSpec: false,
    validateRequests: { allErrors: true, allowUnknownQueryParameters: true },
    validateResponses: responseValidation ? { allErrors: true } : false,
    validateSecurity: false,
    fileUploader: false,
    validateFormats: true,
    $refParser: { mode: 'bundle' },
    formats: {},
    useRequestUrl: false,
    operationHandlers: false,
    serDes: defaultSerDes,
    ajvFormats: { mode: 'fast' },
  };
}

/** The library tags each spec it loads with a serial; its response validator only judges its own. */
let serials = 0;

type SpecDocument = { paths?: Record<string, Record<string, unknown>>; components?: { schemas?: Record<string, unknown> } } & Record<string, unknown>;

const COMPONENT_SCHEMA = '#/components/schemas/';

/** Whether a document uses `discriminator` anywhere (the preprocessor compiles validators for it). */
function mentionsDiscriminator(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(mentionsDiscriminator);
  if (typeof node !== 'object' || node === null) return false;
  return Object.entries(node).some(([key, value]) => key === 'discriminator' || mentionsDiscriminator(value));
}

/**
 * The library's schema preprocessing (serializers, readOnly/writeOnly, examples dropped, `$ref`s of path
 * items, bodies and responses resolved in place), without its Ajv compile of every schema a `$ref` names
 * (PERF-34). Its `resolveSchema` asks an Ajv instance holding each `components.schemas` entry (added by
 * id when the preprocessor is made) for the schema behind a `$ref`, which compiles that schema only to
 * return the very object it was given: two thirds of a first request's CPU. Here the same objects come
 * from a map of those entries taken at the same moment, and any other `$ref` takes the library's own
 * fallback (lodash.get on the document), so each `$ref` resolves to the identical object and the
 * documents come out the same (`tests/server/core/validator-options.test.ts` compares them, sharing
 * included). A document with a `discriminator` (the preprocessor compiles a validator per mapping with
 * that Ajv) takes the library's preprocessor unchanged.
 */
function preprocess(lib: Library, apiDoc: SpecDocument, ajvOptions: unknown, validateResponses: unknown): { apiDoc: SpecDocument; apiDocRes: SpecDocument | null } {
  type Processed = { apiDoc: SpecDocument; apiDocRes: SpecDocument | null };
  if (mentionsDiscriminator(apiDoc)) {
    return new lib.SchemaPreprocessor(apiDoc as never, ajvOptions as never, validateResponses as never).preProcess() as unknown as Processed;
  }
  const byRef = new Map(Object.entries(apiDoc.components?.schemas ?? {}).map(([id, schema]) => [`${COMPONENT_SCHEMA}${id}`, schema]));
  const resolved = new Map<string, unknown>();
  const preprocessor = Object.create(lib.SchemaPreprocessor.prototype) as Record<string, unknown> & { preProcess(): Processed };
  Object.assign(preprocessor, {
    resolvedSchemaCache: resolved,
    apiDoc,
    serDesMap: (ajvOptions as { serDesMap: unknown }).serDesMap,
    responseOpts: validateResponses,
    // The library's `resolveSchema`, line for line, with the map in place of `this.ajv.getSchema(ref)?.schema`.
    resolveSchema(schema: Record<string, unknown> | null | undefined): unknown {
      if (!schema) return null;
      const ref = schema['$ref'] as string | undefined;
      if (ref && resolved.has(ref)) return resolved.get(ref);
      let res: unknown = ref ? byRef.get(ref) : schema;
      if (ref && !res) {
        const path = ref.split('/').join('.');
        res = lib.get(apiDoc, path.substring(path.indexOf('.') + 1));
      }
      if (ref) resolved.set(ref, res);
      return res;
    },
  });
  return preprocessor.preProcess();
}

/** The preprocessed request and response documents of a spec, as the validators get them (for the tests). */
export async function preprocessedDocuments(spec: Record<string, unknown>, responseValidation: boolean): Promise<{ apiDoc: unknown; apiDocRes: unknown }> {
  const lib = await loadLibrary();
  const options = validatorOptions(lib.defaultSerDes, responseValidation);
  const ajvOpts = new lib.AjvOptions(options as never);
  return preprocess(lib, structuredClone(spec) as SpecDocument, ajvOpts.preprocessor, options['validateResponses']);
}

/**
 * The document the library's validators compile each operation's schemas in. They put the document's
 * `paths` and `components` beside every schema they compile ("for resolution with multi-file"), and Ajv
 * walks that whole root, every key, on each compile to collect its ids: the paths (where the preprocessor
 * has put every body and response in place) and the components' examples and responses are most of it,
 * walked again for each request schema and each response status of each operation on its first use
 * (PERF-200: 40% of a server test file's CPU, and part of the first request after a start). What is left
 * out is never resolved through the root: the operation's own schemas come from `byOperation`, and the
 * preprocessed documents `$ref` only into the components kept (`tests/server/core/validator-options.test.ts`
 * resolves every `$ref` of every bundled spec in this root).
 */
export function compileRoot(doc: SpecDocument): SpecDocument {
  const { examples: _examples, responses: _responses, ...components } = (doc['components'] ?? {}) as Record<string, unknown>;
  return { ...doc, paths: {}, components };
}

async function buildValidators(lib: Library, spec: Record<string, unknown>, responseValidation: boolean): Promise<Validators> {
  const { RequestValidator } = lib;
  // The library's option normalization, exactly as its middleware would apply it (see validatorOptions);
  // only its loading and matching steps are left out.
  const options = validatorOptions(lib.defaultSerDes, responseValidation);
  const ajvOpts = new lib.AjvOptions(options as never);
  // The preprocessor mutates the document (serializers, readOnly/writeOnly, drops examples); keep ours intact.
  const apiDoc = structuredClone(spec) as SpecDocument;
  const processed = preprocess(lib, apiDoc, ajvOpts.preprocessor, options['validateResponses']);
  serials += 1;
  const serial = serials;
  const byOperation = new Map<string, OperationSchemas>();
  for (const [path, item] of Object.entries(processed.apiDoc.paths ?? {})) {
    for (const method of Object.keys(item)) {
      if (!HTTP_METHODS.has(method)) continue;
      byOperation.set(`${method.toUpperCase()} ${path}`, {
        // The specs' server URLs carry no path, so the base path is empty and the OpenAPI route is the path.
        expressRoute: expressRouteOf(path),
        openApiRoute: path,
        schema: item[method],
        responseSchema: processed.apiDocRes?.paths?.[path]?.[method],
      });
    }
  }
  const ResponseValidator = processed.apiDocRes ? await loadResponseValidator() : null;
  return {
    request: new RequestValidator(compileRoot(processed.apiDoc) as never, ajvOpts.request),
    response:
      ResponseValidator && processed.apiDocRes
        ? (new ResponseValidator(compileRoot(processed.apiDocRes) as never, ajvOpts.response, options['validateResponses'] as never, serial).validate() as RequestHandler)
        : null,
    serial,
    byOperation,
  };
}

/** The operations a spec declares, for the runner's own match when the caller brings none. */
function specOperations(spec: Record<string, unknown>): OperationEntry[] {
  const paths = (spec['paths'] ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => HTTP_METHODS.has(method))
      .map((method) => ({ id: `${method} ${path}`, method: method.toUpperCase(), path, security: [], tag: '' })),
  );
}

/**
 * The validators of each parsed spec (one object per bundle and process, `loadBundledSpec`), with response
 * validation on and off. What they compile depends on nothing else, so every app made from the same spec
 * in one process (test servers started one after another in a worker, CI-39) compiles each operation's
 * schemas once; a service has one app per spec, for which nothing changes.
 */
const builtFor = new WeakMap<Record<string, unknown>, Map<boolean, Promise<Validators>>>();

export function validatorsOf(spec: Record<string, unknown>, responseValidation: boolean): Promise<Validators> {
  let bySetting = builtFor.get(spec);
  if (!bySetting) builtFor.set(spec, (bySetting = new Map()));
  let built = bySetting.get(responseValidation);
  if (!built) {
    built = loadLibrary().then((lib) => buildValidators(lib, spec, responseValidation));
    // A failed build is not kept: the next request tries again.
    built.catch(() => bySetting.delete(responseValidation));
    bySetting.set(responseValidation, built);
  }
  return built;
}

export function validatorRunner(spec: Record<string, unknown>, responseValidation: boolean): Runner {
  let validators: Validators | undefined;
  let router: OperationRouter | undefined;
  return async (req, res, lateError, given) => {
    validators ??= await validatorsOf(spec, responseValidation);
    let match = given;
    if (!match) {
      router ??= new OperationRouter(specOperations(spec));
      const found = router.lookup(req.method, req.path);
      // The caller answers 404 and 405 itself before validating; an unmatched request has nothing to check.
      if (found.kind !== 'match') return;
      match = found.match;
    }
    const operation = validators.byOperation.get(`${match.operation.method.toUpperCase()} ${match.operation.path}`);
    if (!operation) throw new Error(`validator: the spec has no operation ${match.operation.method} ${match.operation.path}`);
    const openapi: Record<string, unknown> = {
      expressRoute: operation.expressRoute,
      openApiRoute: operation.openApiRoute,
      pathParams: match.params,
      schema: operation.schema,
      serial: validators.serial,
    };
    if (validators.response) openapi['_responseSchema'] = operation.responseSchema;
    (req as unknown as { openapi: unknown }).openapi = openapi;
    req.params = match.params;

    // The request validator calls `next()` when the request is valid and throws its 400 otherwise.
    let passed = false;
    validators.request.validate(req as never, res as never, (() => (passed = true)) as NextFunction);
    if (!passed) throw new Error('validator: the request validator neither passed nor refused the request');
    if (validators.response) {
      // Wraps `res.json`; a failure there reaches `next` after this runner has returned.
      let armed = false;
      validators.response(req, res, ((err?: unknown) => {
        if (!armed) {
          armed = true;
          if (err !== undefined && err !== null) throw err;
          return;
        }
        if (err !== undefined && err !== null) lateError(err);
      }) as NextFunction);
    }
  };
}
