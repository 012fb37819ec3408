/**
 * Serves the Sandbox LMS operations of the dashboard spec (and only those). The dashboard API's own mount
 * (`server/dashboard/mount.ts`) leaves them to this one: their credential is the Sandbox gradebook's
 * access token, not a dashboard token, and the token endpoint answers RFC 6749 errors, not problems.
 * Mount it on the app before the contract dispatcher, with no path prefix:
 *
 *   app.use(sandboxLmsPipeline(services, { responseValidation, bodyLimitBytes }));
 *
 * Requests outside `/sandbox-lms/` pass through untouched. The order is that of the contract pipeline
 * (GAP-23): operation (404, 405 + Allow) → the guard: access token (401), course and line item (404), scope
 * (403) → Content-Type (415) → size (413) → body syntax (400) → the validator over the bundled dashboard
 * spec restricted to these paths (422; 400 `invalid_request` on the token endpoint) → the handler (409 for
 * a stale score) → response validation. Problems go to the app's error handler (`next(err)`), which writes
 * the envelope with the request id; OAuth 2.0 errors of the token endpoint are written here, as RFC 6749
 * objects.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { operations as dashboardOperations } from '../../generated/dashboard/operations.js';
import { parseJsonBody, readRawBody } from '../http/body.js';
import { validatorRunner } from '../http/pipeline.js';
import type { AnyHandler } from '../http/pipeline.js';
import { Problem } from '../http/problem.js';
import { writeResult } from '../http/registry.js';
import type { GuardContext, HandlerContext } from '../http/registry.js';
import { OperationRouter } from '../http/routes.js';
import type { OperationEntry } from '../http/routes.js';
import type { Services } from '../http/services.js';
import { loadBundledSpec } from '../http/spec.js';
import { parseLineItemBody, parseScoreBody } from './gradebook.js';
import { SANDBOX_LMS_OPERATION_IDS, sandboxLmsHandlers } from './handlers.js';
import { AGS_MEDIA_TYPES, SANDBOX_LMS_PATH } from './school.js';

export interface SandboxLmsPipelineOptions {
  responseValidation: boolean;
  bodyLimitBytes: number;
  /** Defaults to `generated/dashboard/openapi.json`. */
  spec?: Record<string, unknown>;
}

const FORM_TYPE = 'application/x-www-form-urlencoded';

/** The media type each operation's body must be sent as; absent for operations without a body. */
const BODY_TYPES: Partial<Record<string, string>> = {
  issueSandboxLmsToken: FORM_TYPE,
  createSandboxLineItem: AGS_MEDIA_TYPES.lineItem,
  updateSandboxLineItem: AGS_MEDIA_TYPES.lineItem,
  postSandboxScore: AGS_MEDIA_TYPES.score,
};

/** The operation's own reading of a body the validator refused, for the Sandbox LMS's exact messages. */
const BODY_PROBLEMS: Partial<Record<string, (body: unknown) => void>> = {
  createSandboxLineItem: parseLineItemBody,
  updateSandboxLineItem: parseLineItemBody,
  postSandboxScore: parseScoreBody,
};

function mediaTypeOf(header: string | undefined): string | null {
  if (!header) return null;
  return header.split(';')[0]?.trim().toLowerCase() ?? null;
}

/** The bundled dashboard spec with only the Sandbox LMS paths (components kept whole for `$ref`s). */
export function sandboxLmsSpec(full: Record<string, unknown> = loadBundledSpec('dashboard')): Record<string, unknown> {
  const paths = (full['paths'] ?? {}) as Record<string, unknown>;
  const kept = Object.fromEntries(Object.entries(paths).filter(([path]) => path.startsWith(`${SANDBOX_LMS_PATH}/`)));
  return { ...full, paths: kept };
}

interface ValidatorError {
  status: number;
  errors?: Array<{ path?: string; message?: string }>;
}

function isValidatorError(err: unknown): err is ValidatorError {
  return typeof err === 'object' && err !== null && typeof (err as { status?: unknown }).status === 'number' && 'errors' in err;
}

/** A body (or query) the validator refused, in the Sandbox LMS's words. */
function validationProblem(operationId: string, err: ValidatorError, body: unknown): Problem {
  const own = BODY_PROBLEMS[operationId];
  if (own) {
    try {
      own(body);
    } catch (problem) {
      if (problem instanceof Problem) return problem;
      throw problem;
    }
  }
  const items = (err.errors ?? []).map((e) => ({
    path: (e.path ?? '').replace(/^\/params\//, '/path/'),
    message: e.message ?? 'is invalid',
  }));
  const first = items[0];
  const inPath = first?.path.startsWith('/path/') ?? false;
  if (inPath) return new Problem(404, 'not_found', 'not found', { errors: items });
  const status = first?.path.startsWith('/query/') ? 400 : 422;
  return new Problem(status, 'invalid_request', first ? `request is invalid: ${first.path} ${first.message}` : 'request is invalid', {
    errors: items,
  });
}

function sendOAuthError(res: Response, description: string): void {
  res.status(400);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  res.json({ error: 'invalid_request', error_description: description });
}

export function sandboxLmsPipeline(services: Services, options: SandboxLmsPipelineOptions): RequestHandler {
  const operations: OperationEntry[] = SANDBOX_LMS_OPERATION_IDS.map((id) => dashboardOperations[id]);
  const router = new OperationRouter(operations);
  const validate = validatorRunner(sandboxLmsSpec(options.spec), options.responseValidation);
  const handlers = sandboxLmsHandlers as unknown as Record<string, AnyHandler>;

  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (req.path !== SANDBOX_LMS_PATH && !req.path.startsWith(`${SANDBOX_LMS_PATH}/`)) {
      next();
      return;
    }
    const locals = res.locals as { requestId: string; log: Services['log']; route?: string; operationId?: string };
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
      const log = (locals.log ?? services.log).child({ operation: operation.id });
      const handler = handlers[operation.id];
      if (!handler) throw new Error(`no Sandbox LMS handler for ${operation.id}`);
      const isToken = operation.id === 'issueSandboxLmsToken';

      if (handler.guard) {
        await handler.guard({
          operationId: operation.id,
          method: req.method,
          params,
          headers: req.headers,
          principal: { kind: 'none' },
          services,
          req,
          requestId: locals.requestId,
          log,
        } as unknown as GuardContext<never>);
      }

      const bodyType = BODY_TYPES[operation.id];
      let body: unknown;
      if (bodyType) {
        if (mediaTypeOf(req.headers['content-type']) !== bodyType) {
          if (isToken) {
            sendOAuthError(res, `Content-Type must be ${FORM_TYPE}`);
            return;
          }
          throw new Problem(415, 'unsupported_media_type', `Content-Type must be ${bodyType}`);
        }
        const raw = await readRawBody(req, options.bodyLimitBytes);
        body = isToken ? Object.fromEntries(new URLSearchParams(raw.toString('utf8'))) : parseJsonBody(raw);
        req.body = body;
      }

      try {
        await validate(req, res, (err) => next(err));
      } catch (err) {
        if (isValidatorError(err) && err.status < 500) {
          if (isToken) {
            // The token endpoint's own checks give the precise RFC 6749 answer; let them speak.
            if (err.errors?.every((e) => (e.path ?? '').startsWith('/body')) !== true) {
              sendOAuthError(res, 'the token request is invalid');
              return;
            }
          } else {
            throw validationProblem(operation.id, err, body);
          }
        } else {
          throw err;
        }
      }

      const ctx = {
        operationId: operation.id,
        params,
        query: req.query,
        body,
        headers: req.headers,
        principal: { kind: 'none' },
        services,
        req,
        res,
        requestId: locals.requestId,
        log,
      } as unknown as HandlerContext<never>;
      const result = (await handler(ctx)) as Parameters<typeof writeResult>[1];
      writeResult(res, result);
    } catch (err) {
      next(err);
    }
  };
}
