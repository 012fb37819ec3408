/**
 * The test-link reset (decisions GAP-39, S-11). Kept: the trial course's `context`, its trial users and
 * memberships, its placements with their `resource_link`s, location IDs and gradebook columns, so every
 * storage, files and score URL stays the same. Discarded: every row and file, the provisioning of every
 * level (the next placement or launch provisions again), the scores in its gradebook, the last picker
 * answers, unused launch tickets, and the copies. Revoked: every `api.token` issued in the Sandbox.
 *
 * Grade attempts are never changed or removed, and the attempts made in a copy belong to that copy's
 * course record; so a copy is not deleted but released from the Sandbox (it stops being a Sandbox course
 * of the tool: its `context_id` answers 404 and it is listed nowhere), after its data is discarded like
 * the trial course's (decision S-35).
 */
import type { Services } from '../http/services.js';
import type { AppRecord } from '../store/index.js';
import { ensureSandbox, sandboxCopies } from './courses.js';

export async function resetSandbox(services: Services, app: AppRecord): Promise<void> {
  const { store } = services;
  const { trial } = await ensureSandbox(services, app.id);
  const copies = await sandboxCopies(services, app, trial);
  const blobIds: string[] = [];
  for (const course of [trial, ...copies]) {
    const discarded = await store.discardContextData(app.id, course.id);
    blobIds.push(...discarded.blobIds);
    await store.pickerAnswers.delete(app.id, course.id);
  }
  const placementIds: string[] = [];
  for (const course of [trial, ...copies]) {
    for (const placement of await store.placements.listByContext(course.id, app.id)) placementIds.push(placement.id);
  }
  // No repository covers these three: scores without their columns, tickets by what they name, and
  // releasing a copy from the Sandbox. One transaction, so a reset is never half done.
  await store.driver.transaction(async (tx) => {
    await tx.run(
      'DELETE FROM gradebook_scores WHERE line_item_id IN (SELECT id FROM gradebook_line_items WHERE context_id = ?)',
      [trial.id],
    );
    for (const id of placementIds) {
      await tx.run('DELETE FROM launch_tickets WHERE used_at IS NULL AND payload LIKE ?', [`%"placement_id":${JSON.stringify(id)}%`]);
    }
    for (const copy of copies) {
      await tx.run('UPDATE contexts SET sandbox_app_id = NULL, updated_at = ? WHERE id = ?', [services.clock.nowMs(), copy.id]);
    }
  });
  // The reset's time is the trial course's last change (see `lastResetOf`).
  await store.contexts.update(trial.id, { name: trial.name });
  for (const id of blobIds) {
    try {
      await services.blobs.delete(id);
    } catch (err) {
      services.log.warn('a file of the reset Sandbox could not be deleted; the sweep will', { err, blob: id });
    }
  }
  services.log.info('sandbox reset', { app: app.id, context: trial.id, copies: copies.length, files: blobIds.length });
}
