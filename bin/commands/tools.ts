/**
 * Tools: register, list, show and edit settings (the three endpoint URLs included), activate, suspend,
 * rotate the API key, the team, and the grade history, as the web dashboard's Tools and Settings pages do.
 */
import { CONTRACT_VERSIONS } from '../../client/index.js';
import type { Command, CommandContext, Schemas } from './command.js';
import { check, scoreText, morePages, oneOf, PAGE_OPTIONS, pageQuery, show, stringOption, table, UsageError } from './command.js';

type App = Schemas['App'];

/** Every value of the spec's enums, as keys: a value added to the spec is a compile error here until listed. */
const HOSTING = Object.keys({ self_hosted: true, hosted: true } satisfies Record<Schemas['Hosting'], true>) as Schemas['Hosting'][];
const STATUSES = Object.keys({ draft: true, active: true, suspended: true } satisfies Record<Schemas['AppStatus'], true>) as Schemas['AppStatus'][];
const VERSIONS = CONTRACT_VERSIONS as readonly Schemas['ContractVersion'][];

const APP_ID = ['app_id'] as const;

function appLines(app: App): string[] {
  return [
    `id:               ${app.id}`,
    `name:             ${app.name}`,
    `status:           ${app.status}`,
    `hosting:          ${app.hosting}`,
    `contract_version: ${app.contract_version}`,
    `description:      ${app.description ?? ''}`,
    `logo_url:         ${app.logo_url ?? ''}`,
    `callback_url:     ${app.callback_url ?? ''}`,
    `provision_url:    ${app.provision_url ?? ''}`,
    `locations_url:    ${app.locations_url ?? ''}`,
    `api_key_hint:     ${app.api_key_hint ?? ''}`,
    `created:          ${app.created}`,
    `updated:          ${app.updated}`,
  ];
}

const appPath = (ctx: CommandContext): { params: { path: { app_id: string } } } => ({ params: { path: { app_id: ctx.args['app_id'] ?? '' } } });

function statusCommand(name: 'activate' | 'suspend'): Command {
  return {
    name,
    summary: name === 'activate' ? 'Activate a tool for real courses.' : 'Suspend a tool: launches and API calls stop.',
    token: 'platform',
    args: APP_ID,
    async run(ctx) {
      const path = name === 'activate' ? '/dashboard/v1/apps/{app_id}/activate' : '/dashboard/v1/apps/{app_id}/suspend';
      const app = check(await ctx.client.POST(path, appPath(ctx)));
      show(ctx, app, () => [`${app.id} is ${app.status}`]);
    },
  };
}

/** Settings options by their API field; "" clears an optional one. */
const SETTINGS: Readonly<Record<string, keyof Schemas['AppSettingsPatch']>> = {
  name: 'name',
  description: 'description',
  'logo-url': 'logo_url',
  'callback-url': 'callback_url',
  'provision-url': 'provision_url',
  'locations-url': 'locations_url',
  'contract-version': 'contract_version',
};

export const commands: Command[] = [
  {
    name: 'register',
    summary: 'Register a tool. Prints its ID and, for a self-hosted tool, its API key: the only time the key is shown.',
    token: 'builder',
    options: {
      name: { type: 'string', value: '<name>', description: 'The tool\'s name (required).' },
      hosting: { type: 'string', value: `<${HOSTING.join('|')}>`, description: 'Default self_hosted.' },
      description: { type: 'string', value: '<text>', description: 'Shown to instructors.' },
      'contract-version': { type: 'string', value: '<version>', description: `Pin a contract: ${VERSIONS.join(', ')}.` },
    },
    async run(ctx) {
      const name = stringOption(ctx, 'name');
      if (name === undefined) throw new UsageError('register needs --name');
      const hosting = oneOf(ctx.values['hosting'], 'hosting', HOSTING) ?? 'self_hosted';
      const body: Schemas['AppRegistration'] = { name, hosting };
      const description = stringOption(ctx, 'description');
      if (description !== undefined) body.description = description;
      const version = oneOf(ctx.values['contract-version'], 'contract-version', VERSIONS);
      if (version !== undefined) body.contract_version = version;
      const registered = check(await ctx.client.POST('/dashboard/v1/apps', { body }));
      show(ctx, registered, () => [
        `registered ${registered.app.id} (${registered.app.status}, ${registered.app.hosting})`,
        ...(registered.api_key !== null ? [`api_key: ${registered.api_key}`] : []),
      ]);
      if (registered.api_key !== null && !ctx.json) ctx.io.err("The API key is shown only this once; store it on the tool's server.");
    },
  },
  {
    name: 'tools list',
    summary: 'List the tools you can see (a builder: its teams\' tools; the platform team: all), newest first.',
    token: 'any',
    options: { status: { type: 'string', value: `<${STATUSES.join('|')}>`, description: 'Only tools in this status.' }, ...PAGE_OPTIONS },
    async run(ctx) {
      const status = oneOf(ctx.values['status'], 'status', STATUSES);
      const list = check(await ctx.client.GET('/dashboard/v1/apps', { params: { query: { ...pageQuery(ctx), ...(status ? { status } : {}) } } }));
      show(ctx, list, () => table(['ID', 'STATUS', 'HOSTING', 'NAME'], list.apps.map((a) => [a.id, a.status, a.hosting, a.name])));
      morePages(ctx, list.next_cursor);
    },
  },
  {
    name: 'tools show',
    summary: 'Show a tool\'s settings and status.',
    token: 'any',
    args: APP_ID,
    async run(ctx) {
      const app = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}', appPath(ctx)));
      show(ctx, app, () => appLines(app));
    },
  },
  {
    name: 'tools settings',
    summary: 'Change a tool\'s settings, all or nothing; the endpoint URLs are checked by the contract\'s URL rules. "" clears an optional field.',
    token: 'any',
    args: APP_ID,
    options: {
      name: { type: 'string', value: '<name>', description: 'The tool\'s name.' },
      description: { type: 'string', value: '<text>', description: 'Shown to instructors.' },
      'logo-url': { type: 'string', value: '<https-url>', description: 'The logo shown to instructors.' },
      'callback-url': { type: 'string', value: '<https-url>', description: 'Where launches are POSTed.' },
      'provision-url': { type: 'string', value: '<https-url>', description: 'Where provision requests go.' },
      'locations-url': { type: 'string', value: '<https-url>', description: 'What the picker calls.' },
      'contract-version': { type: 'string', value: '<version>', description: `The pinned contract: ${VERSIONS.join(', ')}.` },
    },
    async run(ctx) {
      const body: Record<string, string | null> = {};
      for (const [option, field] of Object.entries(SETTINGS)) {
        const value = stringOption(ctx, option);
        if (value === undefined) continue;
        body[field] = value === '' && ['description', 'logo_url', 'provision_url', 'locations_url'].includes(field) ? null : value;
      }
      if (Object.keys(body).length === 0) throw new UsageError(`tools settings needs at least one of ${Object.keys(SETTINGS).map((o) => `--${o}`).join(', ')}`);
      if (body['contract_version'] !== undefined) oneOf(body['contract_version'] ?? undefined, 'contract-version', VERSIONS);
      const app = check(await ctx.client.PATCH('/dashboard/v1/apps/{app_id}', { ...appPath(ctx), body: body as Schemas['AppSettingsPatch'] }));
      show(ctx, app, () => appLines(app));
    },
  },
  statusCommand('activate'),
  statusCommand('suspend'),
  {
    name: 'rotate-key',
    summary: 'Issue a new API key; the old one stops working at once. Prints the key.',
    token: 'any',
    args: APP_ID,
    async run(ctx) {
      const rotated = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/rotate-key', appPath(ctx)));
      show(ctx, rotated, () => [`api_key: ${rotated.api_key}`]);
      if (!ctx.json) ctx.io.err(`The old key stopped working; the new one (${rotated.api_key_hint}) is shown only this once.`);
    },
  },
  {
    name: 'grades',
    summary: 'The tool\'s grade history: every attempt, real courses and Sandbox, newest first.',
    token: 'any',
    args: APP_ID,
    options: {
      context: { type: 'string', value: '<context_id>', description: 'Only this course.' },
      location: { type: 'string', value: '<location_id>', description: 'Only this location.' },
      member: { type: 'string', value: '<member_id>', description: 'Only this member.' },
      ...PAGE_OPTIONS,
    },
    async run(ctx) {
      const query: { context_id?: string; location_id?: string; member_id?: string; limit?: number; cursor?: string } = pageQuery(ctx);
      for (const [option, field] of [['context', 'context_id'], ['location', 'location_id'], ['member', 'member_id']] as const) {
        const value = stringOption(ctx, option);
        if (value !== undefined) query[field] = value;
      }
      const list = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/grades', { params: { path: { app_id: ctx.args['app_id'] ?? '' }, query } }));
      show(ctx, list, () =>
        table(
          ['SUBMITTED', 'STATUS', 'SCORE', 'MEMBER', 'LOCATION', 'CONTEXT'],
          list.attempts.map((a) => [a.submitted, a.status, scoreText(a.score, list.points[a.id] ?? a.max_score), a.member, a.location, a.context]),
        ),
      );
      morePages(ctx, list.next_cursor);
    },
  },
  {
    name: 'team list',
    summary: 'The builders on a tool\'s team.',
    token: 'any',
    args: APP_ID,
    async run(ctx) {
      const team = check(await ctx.client.GET('/dashboard/v1/apps/{app_id}/builders', appPath(ctx)));
      show(ctx, team, () => table(['ID', 'EMAIL', 'NAME'], team.builders.map((b) => [b.id, b.email, b.name])));
    },
  },
  {
    name: 'team add',
    summary: 'Add a builder to a tool\'s team, by email.',
    token: 'any',
    args: APP_ID,
    options: { email: { type: 'string', value: '<email>', description: 'The builder\'s email (required).' } },
    async run(ctx) {
      const email = stringOption(ctx, 'email');
      if (email === undefined) throw new UsageError('team add needs --email');
      const added = check(await ctx.client.POST('/dashboard/v1/apps/{app_id}/builders', { ...appPath(ctx), body: { email } }));
      show(ctx, added, () => [`${added.id} (${added.email}) is on the team`]);
    },
  },
  {
    name: 'team remove',
    summary: 'Remove a builder from a tool\'s team (a tool keeps at least one).',
    token: 'any',
    args: ['app_id', 'builder_id'],
    async run(ctx) {
      const builder_id = ctx.args['builder_id'] ?? '';
      check(await ctx.client.DELETE('/dashboard/v1/apps/{app_id}/builders/{builder_id}', { params: { path: { app_id: ctx.args['app_id'] ?? '', builder_id } } }));
      show(ctx, { removed: builder_id }, () => [`${builder_id} is off the team`]);
    },
  },
];
