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
 *   operation's first request (the library's own cache), so start-up compiles nothing.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator.js';
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

interface Validators {
  request: RequestValidator;
  response: RequestHandler | null;
  serial: number;
  byOperation: Map<string, OperationSchemas>;
}

interface Library {
  OpenApiValidator: typeof OpenApiValidator;
  RequestValidator: typeof RequestValidator;
  ResponseValidator: typeof ResponseValidator;
  SchemaPreprocessor: typeof SchemaPreprocessor;
}

let library: Promise<Library> | undefined;

/**
 * The library (with Ajv and its other dependencies) is loaded by the first request that is validated,
 * not at start: a third of a second of CPU that `/healthz` and a process that is started to be stopped
 * never needed (PERF-31).
 */
function loadLibrary(): Promise<Library> {
  library ??= Promise.all([
    import('express-openapi-validator/dist/openapi.validator.js'),
    import('express-openapi-validator/dist/middlewares/openapi.request.validator.js'),
    import('express-openapi-validator/dist/middlewares/openapi.response.validator.js'),
    import('express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js'),
  ]).then(([validator, request, response, preprocessor]) => ({
    OpenApiValidator: validator.OpenApiValidator,
    RequestValidator: request.RequestValidator,
    ResponseValidator: response.ResponseValidator,
    SchemaPreprocessor: preprocessor.SchemaPreprocessor,
  }));
  return library;
}

/** The library tags each spec it loads with a serial; its response validator only judges its own. */
let serials = 0;

type SpecDocument = { paths?: Record<string, Record<string, unknown>> } & Record<string, unknown>;

function buildValidators(lib: Library, spec: Record<string, unknown>, responseValidation: boolean): Validators {
  const { OpenApiValidator, RequestValidator, ResponseValidator, SchemaPreprocessor } = lib;
  // The library's option normalization (formats, serializers, Ajv options), exactly as its middleware
  // would apply it; only its loading and matching steps are left out.
  const oav = new OpenApiValidator({
    apiSpec: spec as never,
    validateApiSpec: false,
    validateRequests: { allErrors: true, allowUnknownQueryParameters: true },
    validateResponses: responseValidation ? { allErrors: true } : false,
    validateSecurity: false,
    fileUploader: false,
    validateFormats: true,
  });
  // The preprocessor mutates the document (serializers, readOnly/writeOnly, drops examples); keep ours intact.
  const apiDoc = structuredClone(spec) as SpecDocument;
  const processed = new SchemaPreprocessor(apiDoc as never, oav.ajvOpts.preprocessor, oav.options.validateResponses as never).preProcess() as unknown as {
    apiDoc: SpecDocument;
    apiDocRes: SpecDocument | null;
  };
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
  return {
    request: new RequestValidator(processed.apiDoc as never, oav.ajvOpts.request),
    response: processed.apiDocRes
      ? (new ResponseValidator(processed.apiDocRes as never, oav.ajvOpts.response, oav.options.validateResponses as never, serial).validate() as RequestHandler)
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

export function validatorRunner(spec: Record<string, unknown>, responseValidation: boolean): Runner {
  let validators: Validators | undefined;
  let building: Promise<Validators> | undefined;
  let router: OperationRouter | undefined;
  return async (req, res, lateError, given) => {
    if (!validators) {
      building ??= loadLibrary().then((lib) => buildValidators(lib, spec, responseValidation));
      validators = await building;
    }
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
