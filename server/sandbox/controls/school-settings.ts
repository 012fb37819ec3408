/**
 * The tool's Sandbox school's own token lifetimes and line-item scope (decisions LTI-71 to LTI-73): the
 * LMS-wide controls of LTI-69, set on the tool's deployment `sandbox-<app_id>` only, so a tool team runs them
 * on its own school without reaching another tool's.
 *
 * One source of truth for the line-item scope: the LMS's deployment setting. The Sandbox school's record
 * (`grants_line_item_scope`, which the AGS publisher honours before it asks an LMS, LTI-51) is written from it
 * in the same call, withholding exactly when the deployment withholds of its own; `putSandboxSchool` goes
 * through here, so the two never disagree through the service.
 */
import type { Services } from '../../http/services.js';
import type { AppRecord } from '../../store/index.js';
import { ensureSandbox } from '../courses.js';
import type { LmsDeploymentOverrides, LmsDeploymentSettingsJson } from '../lms-client.js';
import { sandboxDeploymentId } from '../lms-sandbox.js';
import { toolLms } from './lms-controls.js';
import { throughLms } from './scope.js';

export interface SchoolSettingsView {
  school: string;
  own: LmsDeploymentOverrides;
  effective: LmsDeploymentSettingsJson['effective'];
}

function viewOf(json: LmsDeploymentSettingsJson): SchoolSettingsView {
  return { school: json.deployment_id, own: json.own, effective: json.effective };
}

export async function readSchoolSettings(services: Services, app: AppRecord): Promise<SchoolSettingsView> {
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    return viewOf(await lms.deploymentSettings(sandboxDeploymentId(app.id)));
  });
}

/** Sets the fields named (null: the LMS-wide value again); `null` as the patch hands every one back. */
export async function setSchoolSettings(services: Services, app: AppRecord, patch: Partial<LmsDeploymentOverrides> | null): Promise<SchoolSettingsView> {
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    const json = await lms.setDeploymentSettings(sandboxDeploymentId(app.id), patch);
    if (patch === null || patch.grants_line_item_scope !== undefined) {
      // The record withholds only what the school withholds of its own; an LMS-wide refusal is the LMS's to answer.
      const { school } = await ensureSandbox(services, app.id);
      await services.store.organizations.setGrantsLineItemScope(school.id, json.own.grants_line_item_scope !== false);
    }
    return viewOf(json);
  });
}
