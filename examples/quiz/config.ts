// The quiz's configuration, from the environment. A bad value stops the start with a message naming it.

export interface QuizConfig {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** The service's origin: the `iss` every token must carry, and where its keys are published. */
  serviceOrigin: string;
  /** The tool's ID at the service: the `aud` and `app` every token must carry. */
  appId: string;
  /** What the service calls, when the quiz is behind a proxy; default `http://<host>:<port>`. */
  publicUrl: string | null;
  allowLoopbackService: boolean;
}

export class QuizConfigError extends Error {
  override readonly name = 'QuizConfigError';
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

function flag(name: string, raw: string | undefined, problems: string[]): boolean {
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  problems.push(`${name} must be 1 or 0, got ${JSON.stringify(raw)}`);
  return false;
}

/**
 * Reads `QUIZ_PORT`, `QUIZ_HOST`, `QUIZ_PUBLIC_URL`, `TIS_ORIGIN`, `TIS_APP_ID` and
 * `ALLOW_LOOPBACK_SERVICE`. Throws `QuizConfigError` listing every problem at once.
 */
export function quizConfigFrom(env: NodeJS.ProcessEnv): QuizConfig {
  const problems: string[] = [];
  const host = env['QUIZ_HOST']?.trim() || '127.0.0.1';

  const rawPort = env['QUIZ_PORT']?.trim() || '4100';
  const port = Number(rawPort);
  if (!/^\d+$/.test(rawPort) || port > 65535) problems.push(`QUIZ_PORT must be a TCP port (0 to 65535), got ${JSON.stringify(rawPort)}`);

  const allowLoopbackService = flag('ALLOW_LOOPBACK_SERVICE', env['ALLOW_LOOPBACK_SERVICE']?.trim(), problems);
  if (allowLoopbackService && env['NODE_ENV'] === 'production') {
    problems.push('ALLOW_LOOPBACK_SERVICE is for development and is refused with NODE_ENV=production');
  }

  const rawOrigin = env['TIS_ORIGIN']?.trim() || 'http://127.0.0.1:3000';
  let serviceOrigin = '';
  try {
    const url = new URL(rawOrigin);
    if (url.origin !== rawOrigin.replace(/\/+$/, '')) {
      problems.push(`TIS_ORIGIN must be an origin only (scheme, host, port), got ${JSON.stringify(rawOrigin)}`);
    } else if (url.protocol === 'https:') {
      serviceOrigin = url.origin;
    } else if (url.protocol === 'http:' && allowLoopbackService && LOOPBACK_HOSTS.has(url.hostname)) {
      serviceOrigin = url.origin;
    } else {
      // Keys fetched over plain HTTP could be swapped on the way, and then any token would verify.
      problems.push(
        `TIS_ORIGIN must be an https:// origin, got ${JSON.stringify(rawOrigin)} ` +
          '(for a local service on http://127.0.0.1 during development, set ALLOW_LOOPBACK_SERVICE=1)',
      );
    }
  } catch {
    problems.push(`TIS_ORIGIN must be the service's origin, such as https://tis.example.edu, got ${JSON.stringify(rawOrigin)}`);
  }

  const appId = env['TIS_APP_ID']?.trim() ?? '';
  if (appId === '') problems.push("TIS_APP_ID must be the tool's ID at the service (app_...), shown when the tool was registered");

  let publicUrl: string | null = null;
  const rawPublic = env['QUIZ_PUBLIC_URL']?.trim();
  if (rawPublic) {
    try {
      const url = new URL(rawPublic);
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('scheme');
      publicUrl = url.href.replace(/\/+$/, '');
    } catch {
      problems.push(`QUIZ_PUBLIC_URL must be an http(s) URL, got ${JSON.stringify(rawPublic)}`);
    }
  }

  if (problems.length > 0) throw new QuizConfigError(problems.join('\n'));
  return { host, port, serviceOrigin, appId, publicUrl, allowLoopbackService };
}
