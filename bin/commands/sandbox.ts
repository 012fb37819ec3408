/**
 * The tool's Sandbox, as the web dashboard's Sandbox and Grades pages work it: open the picker, place a
 * location, launch as a trial user (a link for a browser, or the signed launch itself for a tool's own
 * tests, decision OPS-01), copy the trial course, reset, and read its gradebook.
 */
import type { Command, CommandContext, Schemas } from './command.js';
import { check, oneOf, show, stringOption, table, UsageError } from './command.js';

const ROLES = Object.keys({ instructor: true, assistant: true, manager: true, student_1: true, student_2: true } satisfies Record<Schemas['SandboxRole'], true>) as Schemas['SandboxRole'][];

const appId = (ctx: CommandContext): string => ctx.args['app_id'] ?? '';
const CONTEXT = { context: { type: 'string', value: '<context_id>', description: 'A Sandbox course (default: the trial course).' } } as const;
const AS = { as: { type: 'string', value: `<${ROLES.join('|')}>`, description: 'The trial user (default student_1).' } } as const;

function placementPath(ctx: CommandContext): { app_id: string; placement_id: string } {
  return { app_id: appId(ctx), placement_id: ctx.args['placement_id'] ?? '' };
}

function pickerLines(picker: Schemas['Picker']): string[] {
  const location = (l: Schemas['Location'], indent: string): string => `${indent}${l.extid}  ${l.type}  ${l.label}`;
  return [
    `context: ${picker.context_id} (fetched ${picker.fetched})`,
    ...(picker.message !== null ? [`message: ${picker.message}`] : []),
    ...picker.locations.map((l) => location(l, '  ')),
    ...picker.groups.flatMap((g) => [`  [${g.label}]`, ...g.locations.map((l) => location(l, '    '))]),
  ];
}

function placementRow(p: Schemas['Placement']): string[] {
  return [p.id, p.location.extid, p.location.type, `${p.provisioning.context}/${p.provisioning.location}`, p.location.label];
}

export const commands: Command[] = [
  {
    name: 'sandbox show',
    summary: 'The Sandbox: its trial course, school, trial users, placements and copies.',
    token: 'any',
    args: ['app_id'],
    async run(ctx) {
      const sandbox = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/sandbox', { params: { path: { app_id: appId(ctx) } } }));
      show(ctx, sandbox, () => [
        `trial course: ${sandbox.context} (${sandbox.course.name})`,
        `school:       ${sandbox.organization.title} (issuer ${sandbox.organization.issuer})`,
        `users:        ${Object.keys(sandbox.users).join(', ')}`,
        `copies:       ${sandbox.copies.map((c) => c.context).join(', ') || '(none)'}`,
        `last reset:   ${sandbox.last_reset ?? 'never'}`,
        'placements:',
        ...table(['ID', 'EXTID', 'TYPE', 'PROVISIONED', 'LABEL'], sandbox.placements.map(placementRow)).map((l) => `  ${l}`),
      ]);
    },
  },
  {
    name: 'sandbox picker',
    summary: 'Open the picker as the trial instructor: calls the tool\'s locations URL and prints what it offers.',
    token: 'any',
    args: ['app_id'],
    options: CONTEXT,
    async run(ctx) {
      const context = stringOption(ctx, 'context');
      const picker = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/picker', { params: { path: { app_id: appId(ctx) } }, body: context ? { context_id: context } : {} }));
      show(ctx, picker, () => pickerLines(picker));
    },
  },
  {
    name: 'sandbox place',
    summary: 'Place a location the last picker offered, by its extid; provisioning starts at once.',
    token: 'any',
    args: ['app_id', 'extid'],
    options: { label: { type: 'string', value: '<label>', description: 'The placement\'s name, in place of the location\'s label.' }, ...CONTEXT },
    async run(ctx) {
      const label = stringOption(ctx, 'label');
      const context = stringOption(ctx, 'context');
      const body: Schemas['PlacementCreate'] = { extid: ctx.args['extid'] ?? '', ...(label !== undefined ? { label } : {}), ...(context !== undefined ? { context_id: context } : {}) };
      const placement = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/placements', { params: { path: { app_id: appId(ctx) } }, body }));
      show(ctx, placement, () => [`placed ${placement.id} (${placement.location.label}) in ${placement.context_id}; provisioning ${placement.provisioning.context}/${placement.provisioning.location}`]);
    },
  },
  {
    name: 'sandbox placements',
    summary: 'The placements of a Sandbox course and their provisioning.',
    token: 'any',
    args: ['app_id'],
    options: CONTEXT,
    async run(ctx) {
      const context = stringOption(ctx, 'context');
      const list = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/sandbox/placements', { params: { path: { app_id: appId(ctx) }, query: context ? { context_id: context } : {} } }));
      show(ctx, list, () => table(['ID', 'EXTID', 'TYPE', 'PROVISIONED', 'LABEL'], list.placements.map(placementRow)));
    },
  },
  {
    name: 'sandbox launch-url',
    aliases: ['sandbox-launch-url'],
    summary: 'A launch link for a placement, as a trial user. Open it in a browser before it expires (the Sandbox LMS launch lifetime); it works once.',
    token: 'any',
    args: ['app_id', 'placement_id'],
    options: AS,
    async run(ctx) {
      const as = oneOf(ctx.values['as'], 'as', ROLES) ?? 'student_1';
      const ticket = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/placements/{placement_id}/launches', { params: { path: placementPath(ctx) }, body: { as } }));
      show(ctx, ticket, () => [ticket.launch_url]);
      if (!ctx.json) ctx.io.err(`Open it in a browser before ${ticket.expires}; it works once.`);
    },
  },
  {
    name: 'sandbox signed-launch',
    summary: 'The signed launch the placement sends, for a tool\'s own tests: the URL and the launch_data field to POST (form-encoded) to it.',
    token: 'any',
    args: ['app_id', 'placement_id'],
    options: AS,
    async run(ctx) {
      const as = oneOf(ctx.values['as'], 'as', ROLES) ?? 'student_1';
      const signed = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/placements/{placement_id}/signed-launches', { params: { path: placementPath(ctx) }, body: { as } }));
      show(ctx, signed, () => [`url: ${signed.url}`, `launch_data: ${signed.fields.launch_data}`]);
      if (!ctx.json) ctx.io.err(`POST launch_data form-encoded to the URL before ${signed.expires}.`);
    },
  },
  {
    name: 'sandbox copy',
    summary: 'Copy a Sandbox course, as a school copies a course for a new term (the tool gets provision requests naming the parent).',
    token: 'any',
    args: ['app_id'],
    options: {
      parent: { type: 'string', value: '<context_id>', description: 'The course to copy (default: the trial course).' },
      name: { type: 'string', value: '<name>', description: 'The copy\'s name.' },
      label: { type: 'string', value: '<label>', description: 'The copy\'s label.' },
    },
    async run(ctx) {
      const parent = stringOption(ctx, 'parent');
      const name = stringOption(ctx, 'name');
      const label = stringOption(ctx, 'label');
      if (label !== undefined && name === undefined) throw new UsageError('sandbox copy takes --label only with --name');
      const body: Schemas['SandboxCopyCreate'] = { ...(parent !== undefined ? { parent_context: parent } : {}), ...(name !== undefined ? { course: { name, ...(label !== undefined ? { label } : {}) } } : {}) };
      const copy = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/copies', { params: { path: { app_id: appId(ctx) } }, body }));
      show(ctx, copy, () => [`copied into ${copy.context} (${copy.course.name})`]);
    },
  },
  {
    name: 'sandbox reset',
    summary: 'Reset the Sandbox: everything the tool stored there is gone, and the next launch provisions again.',
    token: 'any',
    args: ['app_id'],
    async run(ctx) {
      check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/reset', { params: { path: { app_id: appId(ctx) } } }));
      show(ctx, { reset: appId(ctx) }, () => [`the Sandbox of ${appId(ctx)} is reset`]);
    },
  },
  {
    name: 'sandbox grades',
    summary: 'The Sandbox gradebook: the last score of each trial user in each column.',
    token: 'any',
    args: ['app_id'],
    options: CONTEXT,
    async run(ctx) {
      const context = stringOption(ctx, 'context');
      const book = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/sandbox/grades', { params: { path: { app_id: appId(ctx) }, query: context ? { context_id: context } : {} } }));
      show(ctx, book, () => [
        `context: ${book.context_id}`,
        ...book.columns.flatMap((c) => [
          `${c.label} (out of ${c.score_maximum}${c.grades_released ? '' : ', not released'})`,
          ...c.scores.map((s) => `  ${s.role}  ${s.score_given} of ${s.score_maximum}  ${s.activity_progress}/${s.grading_progress}  ${s.timestamp}`),
        ]),
      ]);
    },
  },
];
