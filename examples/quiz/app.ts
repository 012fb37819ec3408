// The quiz as an Express app: the kit's endpoints router verifies every token the service sends
// (launch, provision, locations) and hands the typed claims to the handlers below.

import { randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { createTokenVerifier, markProvisioned, type ProvisionClaims, type TokenVerifier } from '../../client/tool/index.js';
import { toolEndpoints } from '../../client/tool/express.js';
import { attemptFrom, openAttempt, ServiceRefusal, submitAttempt, type Attempt } from './attempts.js';
import type { QuizConfig } from './config.js';
import { messagePage, PAGE_CSP, quizPage, resultPage } from './pages.js';
import { activityFor, quizLocations } from './questions.js';

/** How long a launched quiz page can still be submitted. */
const SESSION_TTL_MS = 2 * 60 * 60 * 1000;
const MAX_SESSIONS = 10_000;

export interface QuizLog {
  info(message: string): void;
  error(message: string): void;
}

export interface QuizAppOptions {
  config: Pick<QuizConfig, 'serviceOrigin' | 'appId'>;
  log?: QuizLog;
  /** Replaces the default verifier (tests of other issuers). */
  verifier?: TokenVerifier;
}

/**
 * A launch token is a one-time entry ticket: what the page needs afterwards (the row and files URLs,
 * `grade.submit`, the `api.token`) stays here, under an unguessable ID the page posts back.
 */
class Sessions {
  readonly #entries = new Map<string, { attempt: Attempt; expires: number }>();

  open(attempt: Attempt): string {
    const id = randomBytes(24).toString('base64url');
    const now = Date.now();
    for (const [key, entry] of this.#entries) {
      if (entry.expires > now && this.#entries.size < MAX_SESSIONS) break;
      this.#entries.delete(key);
    }
    this.#entries.set(id, { attempt, expires: now + SESSION_TTL_MS });
    return id;
  }

  get(id: string): Attempt | undefined {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    if (entry.expires <= Date.now()) {
      this.#entries.delete(id);
      return undefined;
    }
    return entry.attempt;
  }
}

const consoleLog: QuizLog = {
  info: (message) => console.log(message),
  error: (message) => console.error(message),
};

/** PUTs each level's provision URL once the 204 has gone out: the course first, then the location. */
async function provision(claims: ProvisionClaims, log: QuizLog): Promise<void> {
  const token = claims.api.token;
  if (token === null) {
    log.error(`provision request for ${claims.context} carried no api.token`);
    return;
  }
  for (const url of [claims.provision.context, claims.provision.location]) {
    if (url === null) continue;
    const done = await markProvisioned(url, token);
    if (done.error) {
      log.error(`provisioning ${url} was refused: ${done.error.status} ${done.error.detail}`);
      return;
    }
    log.info(`provisioned ${url}`);
  }
}

function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set('Content-Security-Policy', PAGE_CSP).set('Cache-Control', 'no-store').type('html').send(html);
}

/** The form's answers as choice indexes; anything that is not one of a question's choices is dropped. */
function answersFrom(body: unknown, attempt: Attempt): Record<string, number> {
  const form = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const answers: Record<string, number> = {};
  for (const question of attempt.activity.questions) {
    const raw = form[question.id];
    if (typeof raw !== 'string' || !/^\d+$/.test(raw)) continue;
    const index = Number(raw);
    if (index < question.choices.length) answers[question.id] = index;
  }
  return answers;
}

export function createQuizApp(options: QuizAppOptions): express.Express {
  const log = options.log ?? consoleLog;
  const verifier = options.verifier ?? createTokenVerifier({ issuer: options.config.serviceOrigin, appId: options.config.appId });
  const sessions = new Sessions();
  const app = express();
  app.disable('x-powered-by');

  app.use(
    toolEndpoints({
      verifier,
      async onLaunch(claims, _req, res) {
        const activity = activityFor(claims.location.extid);
        if (!activity) {
          sendPage(res, 404, messagePage('Activity not available', `This quiz no longer offers "${claims.location.extid ?? ''}". Ask your instructor to replace the link.`));
          return;
        }
        const attempt = attemptFrom(claims, activity);
        const row = await openAttempt(attempt);
        const id = sessions.open(attempt);
        // Relative, so it resolves under whatever prefix the callback URL has.
        sendPage(res, 200, quizPage(activity, row, { name: attempt.name, staff: attempt.staff, action: `attempts/${id}`, graded: attempt.gradeSubmitUrl !== null }));
      },
      onProvision(claims, _req, res) {
        // The contract asks for a prompt 204; the PUTs follow once it has been sent.
        res.once('finish', () => {
          provision(claims, log).catch((err: unknown) => log.error(`provisioning failed: ${String(err)}`));
        });
      },
      onLocations: () => quizLocations(),
    }),
  );

  app.post('/attempts/:session', express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 100 }), async (req: Request, res: Response) => {
    const attempt = sessions.get(String(req.params['session']));
    if (!attempt) {
      sendPage(res, 404, messagePage('Session over', 'This quiz page has expired. Open the activity again from your course.'));
      return;
    }
    const result = await submitAttempt(attempt, answersFrom(req.body, attempt));
    sendPage(res, 200, resultPage(attempt.activity, result));
  });

  app.get('/', (_req, res) => {
    sendPage(res, 200, messagePage('Quiz tool', 'This is a tool of the Tool Integration Service. Open it from a course.'));
  });

  app.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    if (err instanceof ServiceRefusal) {
      log.error(`the service refused ${err.message}`);
      sendPage(res, 502, messagePage('Something went wrong', `The course service refused ${err.step} (${err.problem.status}: ${err.problem.detail}).`));
      return;
    }
    log.error(`quiz error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    sendPage(res, 500, messagePage('Something went wrong', 'The quiz could not do that. Try again from your course.'));
  });

  return app;
}
