/**
 * The layers of the repository, highest first (decision KIT-60). A source file may import a file of its own
 * layer or of a lower one, never of a higher one, and no chain of imports may come back to where it started
 * (`npm run check`'s `imports` step, scripts/lib/import-graph.ts). A file belongs to the entry with the
 * longest matching path; a path ending in `/` names a folder.
 *
 * The order says who may know whom: the dashboard mounts the Sandbox's and the LMS registrations' handlers,
 * the Sandbox drives the LTI tool and its launch page, all of them run on the request pipeline, which runs
 * the features' guards and handlers, which sit on the store, the signer and the configuration. The reference
 * LMS, the kit and the shared rules are packages of their own: the service may use them, they never use it.
 */
export interface Layer {
  name: string;
  paths: readonly string[];
}

export const LAYERS: readonly Layer[] = [
  { name: 'tools', paths: ['bin/', 'scripts/', 'mocks/', 'examples/', 'vitest.config.ts'] },
  // The start-up checks run before anything is opened or written (OPS-30).
  { name: 'entry', paths: ['server/main.ts', 'server/app.ts', 'server/startup/', 'server/next-steps.ts'] },
  { name: 'fronts', paths: ['server/contracts/', 'server/dashboard/', 'server/web-dashboard/'] },
  { name: 'sandbox', paths: ['server/sandbox/'] },
  { name: 'lti', paths: ['server/lti/'] },
  { name: 'launch page', paths: ['server/launch-page/'] },
  { name: 'pipeline', paths: ['server/http/'] },
  {
    name: 'features',
    paths: [
      'server/auth/',
      'server/audit/',
      'server/throttle/',
      'server/placements/',
      'server/launches/',
      'server/scores/',
      'server/files/',
      'server/outbound/',
      // The embedded store's backup and restore, run by `tis store backup|restore` (OPS-21).
      'server/backup/',
      // The metrics the features count and the platform team scrapes (OPS-10, OPS-11).
      'server/metrics/',
      // The typed-handler table and the service container: every feature's handlers are written against
      // them, so they sit with the features rather than with the pipeline that runs them.
      'server/http/registry.ts',
      'server/http/services.ts',
      // What a request carries from its context to its answer: the throttle reads it as the fronts do.
      'server/http/locals.ts',
      // The dashboard API's credentials, guard and list cursors: every dashboard handler uses them, the
      // Sandbox's and the LMS registrations' too, and the audit log records the principal they resolve.
      'server/dashboard/credentials.ts',
      'server/dashboard/guard.ts',
      'server/dashboard/lists.ts',
      // LTI's own words (claims, scopes, media types) and the client-credentials grant: the score publisher
      // speaks them to an LMS as the LTI tool does.
      'server/lti/vocabulary.ts',
      'server/lti/client-credentials.ts',
    ],
  },
  {
    name: 'base',
    // A problem answer, the logger and the loaded specs import nothing of the service but its settings; the
    // S3 settings are read with the rest of the configuration, so a typo stops the start.
    paths: [
      'server/store/',
      'server/signing/',
      'server/config.ts',
      'server/files/s3-settings.ts',
      // TRUST_PROXY is read with the rest of the configuration; the client address it yields is a rule of
      // its own, on proxy-addr alone (H-20).
      'server/http/client-address.ts',
      'server/http/problem.ts',
      'server/http/log.ts',
      'server/http/spec.ts',
    ],
  },
  { name: 'reference LMS', paths: ['lms/'] },
  { name: 'kit', paths: ['client/'] },
  { name: 'rules', paths: ['rules/'] },
];
