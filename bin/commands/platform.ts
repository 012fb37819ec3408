/**
 * The platform team's own commands: who am I, builders (the first builder of a fresh install is created
 * here with the bootstrap token), named operators, and the audit log (decisions OPS-02, OPS-03).
 */
import type { Command } from './command.js';
import { check, morePages, PAGE_OPTIONS, pageQuery, show, stringOption, table, UsageError } from './command.js';

const PERSON = {
  name: { type: 'string', value: '<name>', description: 'The person\'s name (required).' },
  email: { type: 'string', value: '<email>', description: 'Their email, unique among builders and operators (required).' },
} as const;

function person(values: Readonly<Record<string, string | boolean | undefined>>, command: string): { name: string; email: string } {
  const name = values['name'];
  const email = values['email'];
  if (typeof name !== 'string' || typeof email !== 'string') throw new UsageError(`${command} needs --name and --email`);
  return { name, email };
}

export const commands: Command[] = [
  {
    name: 'whoami',
    summary: 'Who the token is: the platform team, or which builder.',
    token: 'any',
    async run(ctx) {
      const me = check(await ctx.client.GET('/dashboard/v1/me'));
      show(ctx, me, () => [me.kind === 'platform' ? 'the platform team' : `builder ${me.builder?.id} (${me.builder?.name}, ${me.builder?.email})`]);
    },
  },
  {
    name: 'builders list',
    summary: 'Every builder, oldest first.',
    token: 'platform',
    options: PAGE_OPTIONS,
    async run(ctx) {
      const list = check(await ctx.client.GET('/dashboard/v1/builders', { params: { query: pageQuery(ctx) } }));
      show(ctx, list, () => table(['ID', 'EMAIL', 'NAME'], list.builders.map((b) => [b.id, b.email, b.name])));
      morePages(ctx, list.next_cursor);
    },
  },
  {
    name: 'builders create',
    summary: 'Create a builder. Prints its token: the only time it is shown.',
    token: 'platform',
    options: PERSON,
    async run(ctx) {
      const created = check(await ctx.client.POST('/dashboard/v1/builders', { body: person(ctx.values, 'builders create') }));
      show(ctx, created, () => [`created ${created.builder.id} (${created.builder.email})`, `token: ${created.token}`]);
      if (!ctx.json) ctx.io.err('The token is shown only this once; hand it to the builder privately.');
    },
  },
  {
    name: 'operators list',
    summary: 'The platform team\'s named operators, revoked ones included.',
    token: 'platform',
    async run(ctx) {
      const list = check(await ctx.client.GET('/dashboard/v1/operators'));
      show(ctx, list, () => table(['ID', 'EMAIL', 'TOKEN', 'REVOKED', 'NAME'], list.operators.map((o) => [o.id, o.email, o.token_hint, o.revoked ?? '-', o.name])));
    },
  },
  {
    name: 'operators create',
    summary: 'Create a named operator with the platform team\'s rights. Prints its token: the only time it is shown.',
    token: 'platform',
    options: PERSON,
    async run(ctx) {
      const created = check(await ctx.client.POST('/dashboard/v1/operators', { body: person(ctx.values, 'operators create') }));
      show(ctx, created, () => [`created ${created.operator.id} (${created.operator.email})`, `token: ${created.token}`]);
      if (!ctx.json) ctx.io.err('The token is shown only this once; hand it to the operator privately.');
    },
  },
  {
    name: 'operators revoke',
    summary: 'Revoke an operator: its token stops working at once.',
    token: 'platform',
    args: ['operator_id'],
    async run(ctx) {
      const operator_id = ctx.args['operator_id'] ?? '';
      check(await ctx.client.DELETE('/dashboard/v1/operators/{operator_id}', { params: { path: { operator_id } } }));
      show(ctx, { revoked: operator_id }, () => [`${operator_id} is revoked`]);
    },
  },
  {
    name: 'audit',
    summary: 'The audit log, newest first: who did what, and when.',
    token: 'platform',
    options: { app: { type: 'string', value: '<app_id>', description: 'Only the entries about this tool.' }, ...PAGE_OPTIONS },
    async run(ctx) {
      const app = stringOption(ctx, 'app');
      const log = check(await ctx.client.GET('/dashboard/v1/audit-log', { params: { query: { ...pageQuery(ctx), ...(app !== undefined ? { app_id: app } : {}) } } }));
      show(ctx, log, () =>
        table(
          ['AT', 'ACTOR', 'ACTION', 'TARGET', 'DETAIL'],
          log.entries.map((e) => [e.at, e.actor.kind === 'platform_token' ? 'platform token' : `${e.actor.name} (${e.actor.id})`, e.action, e.target ?? '-', JSON.stringify(e.detail)]),
        ),
      );
      morePages(ctx, log.next_cursor);
    },
  },
];
