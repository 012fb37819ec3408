/**
 * Where a tool may be used (decisions GAP-24, GAP-25): a suspended tool nowhere; a draft tool only in
 * its own Sandbox courses; an active tool in real courses and its Sandbox. A Sandbox course belongs to
 * one tool and is no place for any other.
 */
import type { AppRecord, ContextRecord } from '../store/index.js';
import { PlacementError } from './errors.js';

export type Availability =
  | { ok: true; sandbox: boolean }
  | { ok: false; reason: 'suspended' | 'draft_outside_sandbox' | 'foreign_sandbox' };

export function isSandboxOf(context: ContextRecord, app: AppRecord): boolean {
  return context.sandboxAppId !== null && context.sandboxAppId === app.id;
}

export function availability(app: AppRecord, context: ContextRecord): Availability {
  if (context.sandboxAppId !== null && context.sandboxAppId !== app.id) return { ok: false, reason: 'foreign_sandbox' };
  if (app.status === 'suspended') return { ok: false, reason: 'suspended' };
  const sandbox = isSandboxOf(context, app);
  if (app.status === 'draft' && !sandbox) return { ok: false, reason: 'draft_outside_sandbox' };
  return { ok: true, sandbox };
}

/** Refuses, as a `PlacementError`, a tool that may not be asked anything in this course. */
export function assertAvailable(app: AppRecord, context: ContextRecord): { sandbox: boolean } {
  const found = availability(app, context);
  if (found.ok) return { sandbox: found.sandbox };
  switch (found.reason) {
    case 'foreign_sandbox':
      throw new PlacementError(404, 'context_not_found', `tool ${app.id} has no course ${context.id}`);
    case 'suspended':
      throw new PlacementError(409, 'app_suspended', `tool ${app.id} is suspended`);
    case 'draft_outside_sandbox':
      throw new PlacementError(
        409,
        'app_not_active',
        `tool ${app.id} is in draft: until the platform team activates it, it can be used only in its Sandbox`,
      );
  }
}
