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
import { ensureSandbox } from './courses.js';
import { withLms } from './lms-courses.js';
import { sandboxLmsClient } from './lms-registration.js';

export async function resetSandbox(services: Services, app: AppRecord): Promise<void> {
  const { trial } = await ensureSandbox(services, app.id);
  // The trial course's scores in the Sandbox's LMS go first (its columns stay, LTI-48): an LMS that
  // refuses leaves the reset undone (503, to retry), and a reset that fails after it is done again whole
  // by the next reset. A copy's LMS course is released with the copy, untouched.
  await withLms(services, app.id, () => sandboxLmsClient(services).deleteScores(trial.externalId));
  // One transaction, so a reset is all done or not at all: a failure halfway leaves no course with its
  // rows gone but its tokens live, and no copy released with its data kept. The courses are read inside
  // it, so a copy made meanwhile is either reset and released here or made after the reset.
  const { blobIds, copies } = await services.store.transaction(async (tx) => {
    const copies = (await tx.contexts.listSandbox(app.id)).filter((c) => c.id !== trial.id);
    const blobIds: string[] = [];
    const placementIds: string[] = [];
    for (const course of [trial, ...copies]) {
      // What `Store.discardContextData` does for one course (decision GAP-39), here inside the reset's
      // transaction: rows, files and pending uploads, provisioning state, tokens issued there.
      await tx.rows.deleteForContext(app.id, course.id);
      blobIds.push(...(await tx.files.deleteForContext(app.id, course.id)));
      await tx.provisioning.resetContext(app.id, course.id);
      await tx.apiTokens.revokeForContext(course.id, app.id);
      await tx.pickerAnswers.delete(app.id, course.id);
      for (const placement of await tx.placements.listByContext(course.id, app.id)) placementIds.push(placement.id);
    }
    await tx.launches.deleteUnusedTicketsForPlacements(placementIds);
    for (const copy of copies) await tx.contexts.releaseFromSandbox(copy.id);
    // The reset's time is the trial course's last change (see `lastResetOf`).
    await tx.contexts.update(trial.id, { name: trial.name });
    return { blobIds, copies };
  });
  // The bytes live in the blob store, which no transaction covers: deleted only once the records naming
  // them are gone for good, so a rolled-back reset never loses a file. One left behind is swept later.
  for (const id of blobIds) {
    try {
      await services.blobs.delete(id);
    } catch (err) {
      services.log.warn('a file of the reset Sandbox could not be deleted; the sweep will', { err, blob: id });
    }
  }
  services.log.info('sandbox reset', { app: app.id, context: trial.id, copies: copies.length, files: blobIds.length });
}
