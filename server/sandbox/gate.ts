/**
 * The Sandbox's gate: a suspended tool's Sandbox is closed (decision GAP-24). Its own module because the
 * Sandbox flow, the signed launch and the LMS controls all ask it, and the controls sit below the flow.
 */
import { Problem } from '../http/problem.js';
import type { AppRecord } from '../store/index.js';

export function assertSandboxOpen(app: AppRecord): void {
  if (app.status === 'suspended') {
    throw new Problem(409, 'sandbox_suspended', `tool ${app.id} is suspended: its Sandbox is closed until the platform team activates it`);
  }
}
