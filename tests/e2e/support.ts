/**
 * What the end-to-end tests share: Chromium as this project launches it, a guard that fails a test on a
 * console error or a request leaving loopback, text assertions that wait, and screenshots under
 * test-artifacts/e2e/. The example quiz tool runs through tests/examples/quiz-process.ts.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { startQuiz, type QuizProcess } from '../examples/quiz-process.ts';

export type { QuizProcess };

export const REPO_ROOT = join(import.meta.dirname, '../..');
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts', 'e2e');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Watches every page of a browser context (popups included): console errors, uncaught exceptions, and
 * requests to anything but loopback, which are also aborted so nothing leaves the machine.
 */
export class BrowserGuard {
  readonly consoleErrors: string[] = [];
  readonly foreignRequests: string[] = [];

  constructor(readonly context: BrowserContext) {}

  async install(): Promise<void> {
    await this.context.route('**/*', async (route) => {
      const url = new URL(route.request().url());
      if ((url.protocol === 'http:' || url.protocol === 'https:') && !LOOPBACK_HOSTS.has(url.hostname)) {
        this.foreignRequests.push(url.href);
        await route.abort('blockedbyclient');
        return;
      }
      await route.continue();
    });
    this.context.on('page', (page) => this.watch(page));
  }

  private watch(page: Page): void {
    page.on('console', (message) => {
      if (message.type() === 'error') this.consoleErrors.push(`${message.text()} (${message.location().url})`);
    });
    page.on('pageerror', (error) => this.consoleErrors.push(`uncaught: ${error.message}`));
  }

  /** Forgets what earlier tests saw, so each test answers only for its own errors and requests. */
  forget(): void {
    this.consoleErrors.length = 0;
    this.foreignRequests.length = 0;
  }

  /**
   * Runs a step whose only console errors must be the ones a refused API call makes Chromium log
   * (`Failed to load resource: the server responded with a status of <status> (<reason>)`), and asserts
   * that exactly those happened, in order.
   */
  async expectingRefusals<T>(statuses: readonly number[], step: () => Promise<T>): Promise<T> {
    const before = this.consoleErrors.length;
    const result = await step();
    const during = this.consoleErrors.splice(before);
    const matches =
      during.length === statuses.length &&
      during.every((line, i) => line.startsWith(`Failed to load resource: the server responded with a status of ${statuses[i]} (`));
    if (!matches) throw new Error(`expected console errors for HTTP ${statuses.join(', ')}, got ${JSON.stringify(during)}`);
    return result;
  }
}

/** Waits until `locator` shows `expected` (exactly, or matching a RegExp) and answers its text. */
export async function shows(locator: Locator, expected: string | RegExp, timeout = 15_000): Promise<string> {
  const deadline = Date.now() + timeout;
  let last: string | null = null;
  for (;;) {
    last = (await locator.count()) === 1 && (await locator.isVisible()) ? ((await locator.textContent()) ?? '').trim() : null;
    if (last !== null && (typeof expected === 'string' ? last === expected : expected.test(last))) return last;
    if (Date.now() > deadline) {
      throw new Error(`expected ${locator.toString()} to show ${String(expected)}, it showed ${last === null ? '(nothing visible)' : JSON.stringify(last)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Screenshots of one suite, numbered in the order its steps ran: test-artifacts/e2e/<suite>/NN-<name>.png
 * (or under another folder of test-artifacts/, `root`). Of the window only: a full page at 420 px cost more
 * CPU than the step it showed (decision CI-40); `failureShots` keeps the full pages of a failed run.
 */
export function screenshots(suite: string, root = ARTIFACTS): (page: Page, name: string) => Promise<void> {
  const dir = join(root, suite);
  let shot = 0;
  return async (page, name) => {
    mkdirSync(dir, { recursive: true });
    shot += 1;
    await page.screenshot({ path: join(dir, `${String(shot).padStart(2, '0')}-${name}.png`) });
  };
}

/** For `onTestFailed`: a screenshot of every page still open, to see where a failed run stopped. */
export function failureShots(context: BrowserContext, suite: string): () => Promise<void> {
  return async () => {
    const dir = join(ARTIFACTS, suite);
    mkdirSync(dir, { recursive: true });
    for (const [i, page] of context.pages().entries()) {
      await page.screenshot({ path: join(dir, `failure-${i + 1}.png`), fullPage: true }).catch(() => undefined);
    }
  };
}

/** The example quiz tool (examples/quiz/README.md) for tool `appId` of the service at `serviceOrigin`. */
export function startQuizTool(serviceOrigin: string, appId: string): Promise<QuizProcess> {
  return startQuiz({ QUIZ_HOST: '127.0.0.1', TIS_ORIGIN: serviceOrigin, TIS_APP_ID: appId, ALLOW_LOOPBACK_SERVICE: '1' });
}
