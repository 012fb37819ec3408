/**
 * The request pipeline of one contract's API, in the order of decision GAP-23:
 *
 *   match the operation (404, 405 + Allow) → credential (401) → the operation's guard (404, 403)
 *   → Content-Type (415) → size (413) → JSON (400) → the validator (mapped to 422 or 400)
 *   → the handler (state 422, then success) → the response validator (when on).
 *
 * The validator (express-openapi-validator) runs late on purpose: run first it would answer a
 * malformed body with 400 before an unauthenticated caller got its 401. It is handed this pipeline's
 * match, so a request is matched to its operation once (validator.ts, PERF-01).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { resolvePrincipal } from '../auth/credentials.js';
import type { EpochHolder } from '../auth/credential-facts.js';
import { credentialFactsOf } from '../auth/credential-facts.js';
import type { Principal } from '../auth/principal.js';
import { hasBody, isMediaType, parseFormBody, parseJsonBody, readRawBody, unsupportedMediaType } from './body.js';
import { requestLocals } from './locals.js';
import { Problem } from './problem.js';
import type { GuardContext, HandlerContext, HandlerResult } from './registry.js';
import { writeResult } from './registry.js';
import { OperationRouter } from './routes.js';
import { validatorRunner } from './validator.js';
import type { OperationEntry } from './routes.js';
import type { Services } from './services.js';
import type { MappingRule } from './validation-errors.js';
import { failuresFromValidatorError, MAPPING_RULES, mapValidationFailures } from './validation-errors.js';

/** A handler of any operation, as the pipeline sees it; type safety lives in `Handlers<...>`. */
export interface AnyHandler {
  (ctx: HandlerContext<never>): Promise<HandlerResult<never>>;
  guard?: ((ctx: GuardContext<never>) => Promise<unknown>) & { confirmsEpoch?: boolean; handlerConfirmsEpoch?: boolean };
}

/** One served contract: its bundled spec, its operations table and one handler per operation. */
export interface ContractDefinition {
  /** The contract date, or the name of a non-contract API (e.g. `dashboard`). */
  version: string;
  /** The bundled OpenAPI document (`generated/<contract>/openapi.json`); the validator reads a copy. */
  spec: Record<string, unknown>;
  operations: Readonly<Record<string, OperationEntry>>;
  handlers: Readonly<Record<string, unknown>>;
  /**
   * Credential resolution; default: the contract's own (`resolvePrincipal`, API key and api.token).
   * An API with its own scheme (the Sandbox LMS's OAuth tokens) authenticates in its handlers instead.
   */
  authenticate?: 'contract' | 'handler';
  /**
   * The contract's own validator-failure messages, tried before the shared table (`MAPPING_RULES`): the
   * archived management and grade operations word their 422s themselves.
   */
  validationRules?: readonly MappingRule[];
}

export interface PipelineOptions {
  responseValidation: boolean;
  bodyLimitBytes: number;
}

type BodyKind =
  | { kind: 'none' }
  | { kind: 'json'; required: boolean; mediaTypes: string[] }
  | { kind: 'form'; required: boolean }
  | { kind: 'multipart'; required: boolean };

interface SpecResponse {
  $ref?: string;
  content?: Record<string, unknown>;
}

interface SpecOperation {
  requestBody?: { $ref?: string; required?: boolean; content?: Record<string, unknown> };
  responses?: Record<string, SpecResponse>;
}

interface OperationShape {
  body: BodyKind;
  /** Status → the media type a success body is written with. */
  responseTypes: Map<number, string>;
  /** A body that is not JSON: 400 where the spec declares a 400, else 422 (H-02). */
  notJsonStatus: 400 | 422;
}

const isJsonMediaType = (type: string): boolean => type === 'application/json' || type.endsWith('+json');

/** What each operation takes and answers, read from the spec so it cannot drift from it. */
function operationShapes(spec: Record<string, unknown>, operations: Iterable<OperationEntry>): Map<string, OperationShape> {
  const paths = (spec['paths'] ?? {}) as Record<string, Record<string, SpecOperation>>;
  const components = (spec['components'] ?? {}) as Record<string, Record<string, unknown>>;
  const requestBodies = (components['requestBodies'] ?? {}) as Record<string, SpecOperation['requestBody']>;
  const responses = (components['responses'] ?? {}) as Record<string, SpecResponse>;
  const shapes = new Map<string, OperationShape>();
  for (const op of operations) {
    const specOp = paths[op.path]?.[op.method.toLowerCase()];
    let body = specOp?.requestBody;
    if (body?.$ref) body = requestBodies[body.$ref.split('/').pop() ?? ''];
    const content = Object.keys(body?.content ?? {});
    const required = body?.required === true;
    let kind: BodyKind;
    if (!body || content.length === 0) kind = { kind: 'none' };
    else if (content.includes('multipart/form-data')) kind = { kind: 'multipart', required };
    else if (content.includes('application/x-www-form-urlencoded')) kind = { kind: 'form', required };
    else kind = { kind: 'json', required, mediaTypes: content.filter(isJsonMediaType) };
    const responseTypes = new Map<number, string>();
    for (const [status, raw] of Object.entries(specOp?.responses ?? {})) {
      const response = raw.$ref ? responses[raw.$ref.split('/').pop() ?? ''] : raw;
      const type = Object.keys(response?.content ?? {}).find(isJsonMediaType);
      if (type && /^\d+$/.test(status)) responseTypes.set(Number(status), type);
    }
    shapes.set(op.id, { body: kind, responseTypes, notJsonStatus: specOp?.responses?.['400'] ? 400 : 422 });
  }
  return shapes;
}

// The validator runner moved to validator.ts (one match per request, PERF-01); re-exported for the mounts
// that import it from here.
export { validatorRunner } from './validator.js';
export type { Runner } from './validator.js';

function isValidatorError(err: unknown): err is { status: number; errors?: unknown; message: string } {
  return typeof err === 'object' && err !== null && typeof (err as { status?: unknown }).status === 'number' && 'errors' in err;
}

export function contractPipeline(contract: ContractDefinition, services: Services, options: PipelineOptions): RequestHandler {
  const operations = Object.values(contract.operations);
  const router = new OperationRouter(operations);
  const shapes = operationShapes(contract.spec, operations);
  const validate = validatorRunner(contract.spec, options.responseValidation);
  const rules = contract.validationRules ? [...contract.validationRules, ...MAPPING_RULES] : MAPPING_RULES;
  for (const op of operations) {
    if (typeof contract.handlers[op.id] !== 'function') throw new Error(`contract ${contract.version}: no handler for ${op.id}`);
  }

  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const locals = requestLocals(res);
    try {
      const found = router.lookup(req.method, req.path);
      if (found.kind === 'not_found') throw new Problem(404, 'not_found', `no operation at ${req.method} ${req.path}`);
      if (found.kind === 'method_not_allowed') {
        throw new Problem(405, 'method_not_allowed', `${req.method} is not allowed here; allowed: ${found.allow.join(', ')}`, {
          headers: { Allow: found.allow.join(', ') },
        });
      }
      const { operation, params } = found.match;
      locals.route = operation.path;
      locals.operationId = operation.id;
      const log = locals.log.child({ operation: operation.id });
      const handler = contract.handlers[operation.id] as AnyHandler;

      const principal: Principal =
        contract.authenticate === 'handler'
          ? { kind: 'none' }
          : await resolvePrincipal(
              (locals.credentialStore ??= credentialFactsOf(services.store, services.clock).requestStore(res.locals)),
              { security: operation.security, scoreUrl: operation.tag === 'Scores' },
              req.headers.authorization,
            );

      // No ID of this service holds U+0000, and PostgreSQL cannot even compare such a string with a
      // column: the URL names nothing (S-29), said before any lookup, on both stores alike. (Other path
      // parameters, such as a file key, get their own rule's answer.)
      for (const name in params) {
        if (name.endsWith('_id') && params[name]?.includes('\u0000')) throw new Problem(404, 'not_found', 'not found');
      }

      // A request that took the credential epoch on trust (PERF-180) confirms it before the operation's
      // guard, or through the guard's own first statement, and so before it reads its body or writes; or,
      // where the guard spends no statement (PERF-216), through the handler's first one, before it writes.
      const holder = res.locals as EpochHolder;
      const facts = credentialFactsOf(services.store, services.clock);
      const unconfirmed = facts.unconfirmed(holder);
      const handlerConfirms = unconfirmed && handler.guard?.handlerConfirmsEpoch === true;
      const guardConfirms = unconfirmed && !handlerConfirms && handler.guard?.confirmsEpoch === true;
      if (!guardConfirms && !handlerConfirms) await facts.confirm(holder);
      if (handler.guard) {
        await handler.guard({
          ...(guardConfirms ? { epoch: facts.requestEpoch(holder) } : {}),
          operationId: operation.id,
          method: req.method,
          params: params as never,
          headers: req.headers,
          principal,
          services,
          req,
          requestId: locals.requestId,
          clientAddress: locals.clientAddress,
          log,
        });
        if (!handlerConfirms) await facts.confirm(holder);
      }

      const shape: OperationShape = shapes.get(operation.id) ?? {
        body: { kind: 'none' },
        responseTypes: new Map<number, string>(),
        notJsonStatus: 422,
      };
      const kind = shape.body;
      let body: unknown;
      if (kind.kind === 'json' || kind.kind === 'form') {
        if (hasBody(req)) {
          const accepted = kind.kind === 'json' ? kind.mediaTypes : ['application/x-www-form-urlencoded'];
          if (!accepted.some((type) => isMediaType(req.headers['content-type'], type))) {
            throw unsupportedMediaType(`Content-Type must be ${accepted.join(' or ')}`);
          }
          const raw = await readRawBody(req, options.bodyLimitBytes, { keep: handlerConfirms });
          body = kind.kind === 'json' ? parseJsonBody(raw, { notJsonStatus: shape.notJsonStatus }) : parseFormBody(raw);
        }
        if (body === undefined) {
          if (kind.required) {
            throw mapValidationFailures(
              operation,
              [{ path: '/body', keyword: 'required', message: 'request body is required' }],
              { body: undefined, params, query: req.query },
              rules,
            );
          }
          // An absent optional body is not a body of the declared media type.
          delete req.headers['content-type'];
        }
        req.body = body;
      }

      if (kind.kind !== 'multipart') {
        try {
          await validate(req, res, (err) => next(err), found.match);
        } catch (err) {
          if (isValidatorError(err) && err.status < 500) {
            throw mapValidationFailures(operation, failuresFromValidatorError(err), { body, params, query: req.query }, rules);
          }
          throw err;
        }
      }

      const ctx = {
        operationId: operation.id,
        params,
        query: req.query,
        body: kind.kind === 'multipart' ? req : body,
        headers: req.headers,
        principal,
        services,
        req,
        res,
        requestId: locals.requestId,
        log,
        ...(handlerConfirms ? { epoch: facts.requestEpoch(holder) } : {}),
      } as unknown as HandlerContext<never>;
      const result = (await handler(ctx)) as Parameters<typeof writeResult>[1];
      // A handler that took the confirmation must confirm before it writes; one that answers without having
      // confirmed (none of the score's paths does) is confirmed here, before the answer leaves. A no-op else.
      if (handlerConfirms) await facts.confirm(holder);
      if (res.headersSent && !('stream' in result)) {
        throw new Error(`handler ${operation.id} wrote the response itself but did not return {stream: true}`);
      }
      writeResult(res, result, 'status' in result ? shape.responseTypes.get(result.status) : undefined, { direct: !options.responseValidation });
    } catch (err) {
      next(err);
    }
  };
}
