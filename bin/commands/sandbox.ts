/**
 * The tool's Sandbox, as the web dashboard's Sandbox and Grades pages work it: open the picker, place a
 * location, launch as a trial user (a link for a browser, or the signed launch itself for a tool's own
 * tests, decision OPS-01), copy the trial course, reset, and read its gradebook.
 */
import type { Command, CommandContext, Schemas } from './command.js';
import { check, gradebookScore, points, morePages, oneOf, PAGE_OPTIONS, pageQuery, show, stringOption, table, UsageError } from './command.js';

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
          `${c.label} (out of ${points(c.score_maximum)}${c.grades_released ? '' : ', not released'})`,
          ...c.scores.map((s) => `  ${s.role}  ${gradebookScore(s.score_given, s.score_maximum)}  ${s.activity_progress}/${s.grading_progress}  ${s.timestamp}`),
        ]),
      ]);
    },
  },
  // The Sandbox LMS's controls (decisions LTI-66 to LTI-69): what a school's administrator or teacher does
  // in its LMS, on the tool's part of the Sandbox LMS; every effect shows at the next launch through it.
  {
    name: 'sandbox lms show',
    summary: "The tool's side of the Sandbox LMS: issuer, client, schools, trial course, trial people, token lifetimes.",
    token: 'any',
    args: ['app_id'],
    async run(ctx) {
      const lms = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/sandbox/lms', { params: { path: { app_id: appId(ctx) } } }));
      show(ctx, lms, () => [
        `issuer:       ${lms.issuer} (client ${lms.client_id}${lms.grants_line_item_scope ? '' : ', no line-item scope'})`,
        `trial course: ${lms.trial_course}`,
        `people:       ${lms.people.join(', ')}`,
        `lifetimes:    access token ${lms.settings.access_token_ttl_seconds} s, id_token ${lms.settings.id_token_ttl_seconds} s, launch link ${lms.settings.launch_ttl_seconds} s`,
        'schools:',
        ...table(['DEPLOYMENT', 'TITLE'], lms.schools.map((s) => [s.deployment_id, s.title])).map((l) => `  ${l}`),
      ]);
    },
  },
  {
    name: 'sandbox lms courses',
    summary: "The tool's courses in the Sandbox LMS, oldest first, with their schools, titles and terms.",
    token: 'any',
    args: ['app_id'],
    options: PAGE_OPTIONS,
    async run(ctx) {
      const list = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/sandbox/lms/courses', { params: { path: { app_id: appId(ctx) }, query: pageQuery(ctx) } }));
      show(ctx, list, () => table(['COURSE', 'SCHOOL', 'LABEL', 'TITLE'], list.courses.map((c) => [c.id, c.school, c.label, c.title])));
      morePages(ctx, list.next_cursor);
    },
  },
  {
    name: 'sandbox lms people',
    summary: "The trial people and the tool's own people in the Sandbox LMS, with their enrolments in the tool's courses.",
    token: 'any',
    args: ['app_id'],
    options: PAGE_OPTIONS,
    async run(ctx) {
      const list = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/sandbox/lms/users', { params: { path: { app_id: appId(ctx) }, query: pageQuery(ctx) } }));
      show(ctx, list, () =>
        table(
          ['SUB', 'NAME', 'ENROLMENTS'],
          list.people.map((p) => [p.sub, `${p.given_name} ${p.family_name}`, p.enrolments.map((e) => `${e.course_id} (${e.roles.map((r) => r.replace(/^.*[#/]/, '')).join(', ')})`).join('; ') || '(none)']),
        ),
      );
      morePages(ctx, list.next_cursor);
    },
  },
  {
    name: 'sandbox lms school',
    summary: 'Another school (deployment) with a course in which the five trial people are enrolled: the same person, another organization and user.',
    token: 'any',
    args: ['app_id'],
    options: {
      title: { type: 'string', value: '<title>', description: "The school's name." },
      'course-title': { type: 'string', value: '<title>', description: "Its course's title (default the trial course's)." },
      'course-label': { type: 'string', value: '<label>', description: "Its course's label (with --course-title)." },
    },
    async run(ctx) {
      const title = stringOption(ctx, 'title');
      const courseTitle = stringOption(ctx, 'course-title');
      const courseLabel = stringOption(ctx, 'course-label');
      if ((courseTitle === undefined) !== (courseLabel === undefined)) throw new UsageError('sandbox lms school takes --course-title and --course-label together');
      const body = { ...(title !== undefined ? { title } : {}), ...(courseTitle !== undefined && courseLabel !== undefined ? { course: { title: courseTitle, label: courseLabel } } : {}) };
      const school = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/lms/schools', { params: { path: { app_id: appId(ctx) } }, body }));
      show(ctx, school, () => [`school ${school.deployment_id} (${school.title}) with course ${school.course.id}`]);
    },
  },
  {
    name: 'sandbox lms course',
    summary: 'A course of the Sandbox LMS: its enrolments, resource links and gradebook columns.',
    token: 'any',
    args: ['app_id', 'course_id'],
    async run(ctx) {
      const course = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/sandbox/lms/courses/{course_id}', { params: { path: lmsCoursePath(ctx) } }));
      show(ctx, course, () => lmsCourseLines(course));
    },
  },
  {
    name: 'sandbox lms course-add',
    summary: 'A new course in one of the Sandbox LMS schools, nobody enrolled.',
    token: 'any',
    args: ['app_id'],
    options: {
      title: { type: 'string', value: '<title>', description: "The course's title (required)." },
      label: { type: 'string', value: '<label>', description: "The course's label (required)." },
      school: { type: 'string', value: '<deployment_id>', description: 'The school (default the Sandbox school).' },
    },
    async run(ctx) {
      const title = stringOption(ctx, 'title');
      const label = stringOption(ctx, 'label');
      const school = stringOption(ctx, 'school');
      if (title === undefined || label === undefined) throw new UsageError('sandbox lms course-add needs --title and --label');
      const course = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/lms/courses', { params: { path: { app_id: appId(ctx) } }, body: { title, label, ...(school !== undefined ? { school } : {}) } }));
      show(ctx, course, () => lmsCourseLines(course));
    },
  },
  {
    name: 'sandbox lms rename',
    summary: "Rename or re-term a Sandbox LMS course: the next launch's course.name and course.label follow.",
    token: 'any',
    args: ['app_id', 'course_id'],
    options: {
      title: { type: 'string', value: '<title>', description: 'The new title.' },
      label: { type: 'string', value: '<label>', description: 'The new label (a new term).' },
    },
    async run(ctx) {
      const title = stringOption(ctx, 'title');
      const label = stringOption(ctx, 'label');
      if (title === undefined && label === undefined) throw new UsageError('sandbox lms rename needs --title or --label');
      const body = { ...(title !== undefined ? { title } : {}), ...(label !== undefined ? { label } : {}) };
      const course = check(await ctx.client.PATCH('/dashboard/v1/apps/{app_id}/sandbox/lms/courses/{course_id}', { params: { path: lmsCoursePath(ctx) }, body }));
      show(ctx, course, () => [`${course.id}: ${course.title} (${course.label})`]);
    },
  },
  {
    name: 'sandbox lms copy',
    summary: "The LMS's course copy: links and columns copied, the copy's launches provision with parent_context.",
    token: 'any',
    args: ['app_id', 'course_id'],
    options: {
      title: { type: 'string', value: '<title>', description: "The copy's title (default the course's)." },
      label: { type: 'string', value: '<label>', description: "The copy's label (default the course's)." },
      'no-links': { type: 'boolean', description: 'Copy no resource links or columns.' },
      'with-enrolments': { type: 'boolean', description: 'Enrol the same people in the copy.' },
    },
    async run(ctx) {
      const title = stringOption(ctx, 'title');
      const label = stringOption(ctx, 'label');
      const body = {
        ...(title !== undefined ? { title } : {}),
        ...(label !== undefined ? { label } : {}),
        with_links: ctx.values['no-links'] !== true,
        with_enrolments: ctx.values['with-enrolments'] === true,
      };
      const copy = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/lms/courses/{course_id}/copies', { params: { path: lmsCoursePath(ctx) }, body }));
      show(ctx, copy, () => [`copied into ${copy.id} (history ${copy.history.join(', ')})`]);
    },
  },
  {
    name: 'sandbox lms user',
    summary: 'A new person in the Sandbox LMS, enrolled nowhere (enrol them with "sandbox lms enrol").',
    token: 'any',
    args: ['app_id'],
    options: {
      'given-name': { type: 'string', value: '<name>', description: 'Their given name (required).' },
      'family-name': { type: 'string', value: '<name>', description: 'Their family name (required).' },
      email: { type: 'string', value: '<email>', description: 'Their email (required).' },
    },
    async run(ctx) {
      const given = stringOption(ctx, 'given-name');
      const family = stringOption(ctx, 'family-name');
      const email = stringOption(ctx, 'email');
      if (given === undefined || family === undefined || email === undefined) throw new UsageError('sandbox lms user needs --given-name, --family-name and --email');
      const person = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/lms/users', { params: { path: { app_id: appId(ctx) } }, body: { given_name: given, family_name: family, email } }));
      show(ctx, person, () => [person.sub]);
    },
  },
  {
    name: 'sandbox lms enrol',
    summary: 'Enrol a person in a Sandbox LMS course with these roles (instructor, student, assistant, … or LIS URIs).',
    token: 'any',
    args: ['app_id', 'course_id', 'sub'],
    options: { role: { type: 'string', value: '<role>', multiple: true, description: 'A role; repeat for several (default student).' } },
    async run(ctx) {
      const roles = ctx.lists['role'] ?? [];
      const course = check(
        await ctx.client.PUT('/dashboard/v1/apps/{app_id}/sandbox/lms/courses/{course_id}/enrolments/{sub}', {
          params: { path: { ...lmsCoursePath(ctx), sub: ctx.args['sub'] ?? '' } },
          body: { roles: roles.length > 0 ? [...roles] : ['student'] },
        }),
      );
      show(ctx, course, () => lmsCourseLines(course));
    },
  },
  {
    name: 'sandbox lms unenrol',
    summary: 'Take a person out of a Sandbox LMS course.',
    token: 'any',
    args: ['app_id', 'course_id', 'sub'],
    async run(ctx) {
      const course = check(
        await ctx.client.DELETE('/dashboard/v1/apps/{app_id}/sandbox/lms/courses/{course_id}/enrolments/{sub}', { params: { path: { ...lmsCoursePath(ctx), sub: ctx.args['sub'] ?? '' } } }),
      );
      show(ctx, course, () => lmsCourseLines(course));
    },
  },
  {
    name: 'sandbox lms link',
    summary: "A resource link made by hand, bound to no placement (the instructor's first launch chooses the location); --no-column for an assessment with no gradebook column.",
    token: 'any',
    args: ['app_id', 'course_id'],
    options: {
      title: { type: 'string', value: '<title>', description: "The link's title (required)." },
      points: { type: 'string', value: '<n>', description: 'Its gradebook column, out of n points.' },
      'no-column': { type: 'boolean', description: 'No gradebook column.' },
    },
    async run(ctx) {
      const title = stringOption(ctx, 'title');
      const points = stringOption(ctx, 'points');
      const noColumn = ctx.values['no-column'] === true;
      if (title === undefined) throw new UsageError('sandbox lms link needs --title');
      if ((points === undefined) === !noColumn) throw new UsageError('sandbox lms link takes exactly one of --points and --no-column');
      if (points !== undefined && !/^\d+(\.\d+)?$/.test(points)) throw new UsageError('--points must be a number');
      const body = { title, column: points !== undefined ? { score_maximum: Number(points) } : null };
      const course = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/lms/courses/{course_id}/links', { params: { path: lmsCoursePath(ctx) }, body }));
      show(ctx, course, () => lmsCourseLines(course));
    },
  },
  {
    name: 'sandbox lms refuse-scores',
    summary: "Make a gradebook column refuse every score with an HTTP status (--status none accepts them again).",
    token: 'any',
    args: ['app_id', 'course_id', 'line_item_id'],
    options: { status: { type: 'string', value: '<400..599|none>', description: 'The status the LMS answers scores with (required).' } },
    async run(ctx) {
      const status = stringOption(ctx, 'status');
      if (status === undefined || (status !== 'none' && !/^[45]\d\d$/.test(status))) throw new UsageError('sandbox lms refuse-scores needs --status 400..599 or --status none');
      const course = check(
        await ctx.client.PATCH('/dashboard/v1/apps/{app_id}/sandbox/lms/courses/{course_id}/line-items/{line_item_id}', {
          params: { path: { ...lmsCoursePath(ctx), line_item_id: ctx.args['line_item_id'] ?? '' } },
          body: { refuses_scores_with: status === 'none' ? null : Number(status) },
        }),
      );
      show(ctx, course, () => lmsCourseLines(course));
    },
  },
  {
    name: 'sandbox lms launch',
    summary: "A Sandbox LMS launch URL for one enrolled person: of a resource link (--link), or Deep Linking into a course (--course).",
    token: 'any',
    args: ['app_id', 'sub'],
    options: {
      link: { type: 'string', value: '<resource_link_id>', description: 'The resource link to launch.' },
      course: { type: 'string', value: '<course_id>', description: "A Deep Linking launch of the course (opens the service's picker)." },
    },
    async run(ctx) {
      const link = stringOption(ctx, 'link');
      const course = stringOption(ctx, 'course');
      if ((link === undefined) === (course === undefined)) throw new UsageError('sandbox lms launch takes exactly one of --link and --course');
      const body = { sub: ctx.args['sub'] ?? '', ...(link !== undefined ? { resource_link_id: link } : {}), ...(course !== undefined ? { course_id: course } : {}) };
      const launch = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/sandbox/lms/launches', { params: { path: { app_id: appId(ctx) } }, body }));
      show(ctx, launch, () => [launch.url]);
      if (!ctx.json) ctx.io.err(`Open it in a browser before ${launch.expires}.`);
    },
  },
  {
    name: 'sandbox lms lifetimes',
    summary: "The Sandbox LMS's token lifetimes in seconds, for every tool's Sandbox (platform team); --reset restores 3600/300/300.",
    token: 'platform',
    options: {
      'access-token': { type: 'string', value: '<seconds>', description: 'AGS access tokens.' },
      'id-token': { type: 'string', value: '<seconds>', description: 'id_tokens.' },
      'launch-link': { type: 'string', value: '<seconds>', description: 'Launch links.' },
      reset: { type: 'boolean', description: 'Back to the defaults.' },
    },
    async run(ctx) {
      const fields = { 'access-token': 'access_token_ttl_seconds', 'id-token': 'id_token_ttl_seconds', 'launch-link': 'launch_ttl_seconds' } as const;
      const patch: Record<string, number> = {};
      for (const [option, field] of Object.entries(fields)) {
        const value = stringOption(ctx, option);
        if (value === undefined) continue;
        if (!/^\d+$/.test(value)) throw new UsageError(`--${option} must be a whole number of seconds`);
        patch[field] = Number(value);
      }
      const reset = ctx.values['reset'] === true;
      if (reset === (Object.keys(patch).length > 0)) throw new UsageError('sandbox lms lifetimes takes --reset, or one or more of --access-token, --id-token, --launch-link');
      const settings = reset
        ? check(await ctx.client.DELETE('/dashboard/v1/sandbox/lms/settings', {}))
        : check(await ctx.client.PATCH('/dashboard/v1/sandbox/lms/settings', { body: patch }));
      show(ctx, settings, () => [`access token ${settings.access_token_ttl_seconds} s, id_token ${settings.id_token_ttl_seconds} s, launch link ${settings.launch_ttl_seconds} s`]);
    },
  },
  {
    name: 'sandbox lms line-item-scope',
    summary: "Grant or withhold the line-item scope of the service's Sandbox LMS developer key, for every tool's Sandbox (platform team).",
    token: 'platform',
    args: ['grant_or_withhold'],
    async run(ctx) {
      const choice = ctx.args['grant_or_withhold'];
      if (choice !== 'grant' && choice !== 'withhold') throw new UsageError('sandbox lms line-item-scope takes grant or withhold');
      const registration = check(await ctx.client.PATCH('/dashboard/v1/sandbox/lms/registration', { body: { grants_line_item_scope: choice === 'grant' } }));
      show(ctx, registration, () => [`client ${registration.client_id} ${registration.grants_line_item_scope ? 'grants' : 'withholds'} the line-item scope`]);
    },
  },
  {
    name: 'sandbox lms school-settings',
    summary: "The tool's Sandbox school's own token lifetimes and line-item scope (its school only); `lms` follows the LMS-wide value again, --reset every one.",
    token: 'any',
    args: ['app_id'],
    options: {
      'access-token': { type: 'string', value: '<seconds|lms>', description: "AGS access tokens on the school's courses." },
      'id-token': { type: 'string', value: '<seconds|lms>', description: 'id_tokens of its launches.' },
      'launch-link': { type: 'string', value: '<seconds|lms>', description: 'Its launch links.' },
      'line-item-scope': { type: 'string', value: '<grant|withhold|lms>', description: 'Whether its gradebook columns may be managed (max_score).' },
      reset: { type: 'boolean', description: 'Every setting back to the LMS-wide one.' },
    },
    async run(ctx) {
      const fields = { 'access-token': 'access_token_ttl_seconds', 'id-token': 'id_token_ttl_seconds', 'launch-link': 'launch_ttl_seconds' } as const;
      const patch: { access_token_ttl_seconds?: number | null; id_token_ttl_seconds?: number | null; launch_ttl_seconds?: number | null; grants_line_item_scope?: boolean | null } = {};
      for (const [option, field] of Object.entries(fields)) {
        const value = stringOption(ctx, option);
        if (value === undefined) continue;
        if (value !== 'lms' && !/^\d+$/.test(value)) throw new UsageError(`--${option} must be a whole number of seconds, or lms`);
        patch[field] = value === 'lms' ? null : Number(value);
      }
      const scope = stringOption(ctx, 'line-item-scope');
      if (scope !== undefined) {
        if (scope !== 'grant' && scope !== 'withhold' && scope !== 'lms') throw new UsageError('--line-item-scope takes grant, withhold or lms');
        patch.grants_line_item_scope = scope === 'lms' ? null : scope === 'grant';
      }
      const reset = ctx.values['reset'] === true;
      if (reset && Object.keys(patch).length > 0) throw new UsageError('sandbox lms school-settings takes --reset alone');
      const path = { params: { path: { app_id: appId(ctx) } } };
      const settings = reset
        ? check(await ctx.client.DELETE('/dashboard/v1/apps/{app_id}/sandbox/lms/settings', path))
        : Object.keys(patch).length > 0
          ? check(await ctx.client.PATCH('/dashboard/v1/apps/{app_id}/sandbox/lms/settings', { ...path, body: patch }))
          : check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/sandbox/lms/settings', path));
      const mark = (own: unknown): string => (own === null ? '' : ' (own)');
      const { own, effective } = settings;
      show(ctx, settings, () => [
        `school ${settings.school}: access token ${effective.access_token_ttl_seconds} s${mark(own.access_token_ttl_seconds)}, id_token ${effective.id_token_ttl_seconds} s${mark(own.id_token_ttl_seconds)}, launch link ${effective.launch_ttl_seconds} s${mark(own.launch_ttl_seconds)}, line-item scope ${effective.grants_line_item_scope ? 'granted' : 'withheld'}${mark(own.grants_line_item_scope)}`,
      ]);
    },
  },
];

function lmsCoursePath(ctx: CommandContext): { app_id: string; course_id: string } {
  return { app_id: appId(ctx), course_id: ctx.args['course_id'] ?? '' };
}

function lmsCourseLines(course: Schemas['SandboxLmsCourse']): string[] {
  return [
    `course: ${course.id} (${course.title}, ${course.label}) in school ${course.school}${course.history.length > 0 ? `, copied from ${course.history.join(', ')}` : ''}`,
    'enrolments:',
    ...table(['SUB', 'ROLES'], course.enrolments.map((e) => [e.sub, e.roles.map((r) => r.replace(/^.*[#/]/, '')).join(', ')])).map((l) => `  ${l}`),
    'resource links:',
    ...table(
      ['ID', 'COLUMN', 'TITLE'],
      course.resource_links.map((l) => [
        l.id,
        l.columns.map((c) => `${c.line_item_id} (${c.score_maximum}${c.refuses_scores_with !== null ? `, refuses ${c.refuses_scores_with}` : ''})`).join(', ') || '(no column)',
        l.title,
      ]),
    ).map((line) => `  ${line}`),
  ];
}

