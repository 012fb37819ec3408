/**
 * `tis lms list|show|activate|deactivate|add|refusals|refusal`: the platform team's LMS registrations
 * and their refused messages (decisions LTI-06, LTI-07, LTI-64, LTI-126), over the dashboard API like
 * every `tis` command.
 */
import type { Command, CommandContext, OptionSpec, Schemas } from './command.js';
import { check, show, stringOption, table, UsageError } from './command.js';

type Registration = Schemas['LmsRegistration'];
type Refusal = Schemas['LmsRefusal'];

function describeRefusal(r: Refusal): string[] {
  return [
    `${r.report_id} ${r.created} ${r.message} refused (${r.code}, HTTP ${r.status})`,
    `  registration: ${r.registration_id ?? '(none: no registration for this issuer and client)'}`,
    ...(r.issuer !== null ? [`  issuer: ${r.issuer}${r.client_id !== null ? `, client ${r.client_id}` : ''}${r.deployment_id !== null ? `, deployment ${r.deployment_id}` : ''}`] : []),
    `  reason: ${r.reason}`,
    `  what to change: ${r.advice}`,
    `  detail: ${r.detail}`,
  ];
}

function describe(r: Registration): string[] {
  return [
    `${r.id} ${r.status} (${r.method}) ${r.title}`,
    ...(r.sandbox ? ["  the Sandbox's own LMS registration: every Sandbox launch and score goes through it; it cannot be deactivated"] : []),
    `  issuer: ${r.issuer}`,
    `  client_id: ${r.client_id}`,
    `  deployments: ${r.deployments.length === 0 ? '(none yet)' : r.deployments.join(', ')}`,
    `  auth_url: ${r.auth_url}`,
    `  token_url: ${r.token_url}${r.token_audience !== null ? ` (audience ${r.token_audience})` : ''}`,
    `  jwks_url: ${r.jwks_url}`,
    `  grades: ${r.grades.publishable ? 'published' : 'cannot be published'}; ${r.grades.explanation}`,
  ];
}

const ADD_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  issuer: { type: 'string', value: '<url>', description: "The LMS's issuer (`iss` of its id_tokens), e.g. https://canvas.instructure.com (required)." },
  'client-id': { type: 'string', value: '<id>', description: 'The client ID the LMS gave the service (required).' },
  deployment: { type: 'string', value: '<id>', multiple: true, description: 'A deployment ID; repeat for several. None: the first launch brings it (an unseen deployment is a new school).' },
  'auth-url': { type: 'string', value: '<url>', description: "The LMS's OIDC authorization endpoint (required)." },
  'token-url': { type: 'string', value: '<url>', description: "The LMS's OAuth 2.0 token endpoint, for grades (required)." },
  'jwks-url': { type: 'string', value: '<url>', description: "The LMS's public keys (JWKS URL) (required)." },
  'token-audience': { type: 'string', value: '<aud>', description: "The client assertion's audience when it is not the token URL (Brightspace: https://api.brightspace.com/auth/token)." },
  title: { type: 'string', value: '<text>', description: 'A name for the platform team (default: the issuer\'s host).' },
};

function registrationId(ctx: CommandContext): string {
  return ctx.args['registration_id'] ?? '';
}

export const commands: Command[] = [
  {
    name: 'lms list',
    summary: "The schools' LMS registrations, with their status, and the Sandbox's own apart.",
    token: 'platform',
    async run(ctx) {
      const list = check(await ctx.client.GET('/dashboard/v1/lms'));
      // The Sandbox's own registration apart, after the schools' (decision LTI-100).
      show(ctx, list, () => [
        ...table(
          ['ID', 'STATUS', 'METHOD', 'ISSUER', 'CLIENT', 'DEPLOYMENTS'],
          list.registrations.map((r) => [r.id, r.status, r.method, r.issuer, r.client_id, String(r.deployments.length)]),
        ),
        ...(list.sandbox === null ? [] : ['', `${list.sandbox.title}: ${list.sandbox.id} ${list.sandbox.status}, issuer ${list.sandbox.issuer} (not a school; cannot be deactivated)`]),
      ]);
    },
  },
  {
    name: 'lms show',
    summary: 'One LMS registration: its issuer, client, deployments and URLs.',
    token: 'platform',
    args: ['registration_id'],
    async run(ctx) {
      const registration_id = registrationId(ctx);
      const r = check(await ctx.client.GET('/dashboard/v1/lms/{registration_id}', { params: { path: { registration_id } } }));
      show(ctx, r, () => describe(r));
    },
  },
  {
    name: 'lms activate',
    summary: 'Activate a registration: its LMS can launch and receive grades.',
    token: 'platform',
    args: ['registration_id'],
    async run(ctx) {
      const registration_id = registrationId(ctx);
      const r = check(await ctx.client.POST('/dashboard/v1/lms/{registration_id}/activate', { params: { path: { registration_id } } }));
      show(ctx, r, () => [`${r.id} is ${r.status}`]);
    },
  },
  {
    name: 'lms deactivate',
    summary: "Deactivate a registration: its launches are refused; schools, courses and grades are kept. The Sandbox's own is refused.",
    token: 'platform',
    args: ['registration_id'],
    async run(ctx) {
      const registration_id = registrationId(ctx);
      const r = check(await ctx.client.POST('/dashboard/v1/lms/{registration_id}/deactivate', { params: { path: { registration_id } } }));
      show(ctx, r, () => [`${r.id} is ${r.status}`]);
    },
  },
  {
    name: 'lms add',
    summary: 'Register an LMS by hand (no Dynamic Registration: Blackboard, older Canvas). It arrives pending; adding it again adds deployments.',
    token: 'platform',
    options: ADD_OPTIONS,
    async run(ctx) {
      const required = ['issuer', 'client-id', 'auth-url', 'token-url', 'jwks-url'] as const;
      const deployments = ctx.lists['deployment'] ?? [];
      const missing = required.filter((name) => stringOption(ctx, name) === undefined);
      if (missing.length > 0) throw new UsageError(`lms add needs ${missing.map((m) => `--${m}`).join(', ')}`);
      const tokenAudience = stringOption(ctx, 'token-audience');
      const title = stringOption(ctx, 'title');
      const r = check(
        await ctx.client.POST('/dashboard/v1/lms', {
          body: {
            issuer: stringOption(ctx, 'issuer') ?? '',
            client_id: stringOption(ctx, 'client-id') ?? '',
            deployments: [...deployments],
            auth_url: stringOption(ctx, 'auth-url') ?? '',
            token_url: stringOption(ctx, 'token-url') ?? '',
            jwks_url: stringOption(ctx, 'jwks-url') ?? '',
            ...(tokenAudience !== undefined ? { token_audience: tokenAudience } : {}),
            ...(title !== undefined ? { title } : {}),
          },
        }),
      );
      show(ctx, r, () => describe(r));
    },
  },
  {
    name: 'lms refusals',
    summary: "A registration's refused logins, launches and Deep Linking messages, newest first, with the reason and what to change.",
    token: 'platform',
    args: ['registration_id'],
    async run(ctx) {
      const registration_id = registrationId(ctx);
      const list = check(await ctx.client.GET('/dashboard/v1/lms/{registration_id}/refusals', { params: { path: { registration_id } } }));
      show(ctx, list, () => (list.refusals.length === 0 ? ['no refusals kept (the last 200, 30 days)'] : list.refusals.flatMap(describeRefusal)));
    },
  },
  {
    name: 'lms refusal',
    summary: 'One refused message, by the report ID its page showed.',
    token: 'platform',
    args: ['report_id'],
    async run(ctx) {
      const report_id = ctx.args['report_id'] ?? '';
      const r = check(await ctx.client.GET('/dashboard/v1/lms-refusals/{report_id}', { params: { path: { report_id } } }));
      show(ctx, r, () => describeRefusal(r));
    },
  },
];
