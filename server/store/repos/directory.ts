import { newId } from '../ids.js';
import type { RepoContext } from './common.js';
import { bool, parseJson, updateSet } from './common.js';

/**
 * Schools, courses, people and memberships, as launches reveal them: the service is never told about
 * them ahead of time, so every write here is an idempotent "upsert on sight". Each upsert inserts with
 * ON CONFLICT DO NOTHING and then updates, which is race-free on both engines when two first launches
 * of the same person arrive at once.
 */

export interface OrganizationRecord {
  id: string;
  title: string;
  issuer: string;
  client: string;
  deployment: string;
  /** Whether the school's LMS developer key grants the line-item scope (needed for `max_score`). */
  grantsLineItemScope: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface ContextRecord {
  id: string;
  organizationId: string;
  /** The LMS's own course identifier, unique within the school. */
  externalId: string;
  name: string;
  label: string | null;
  /** The course this one was copied from. */
  parentContextId: string | null;
  /** Set on a tool's private Sandbox trial course (and its copies). */
  sandboxAppId: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface UserRecord {
  id: string;
  organizationId: string;
  /** The LMS's identifier of the person; never handed to a tool. */
  externalId: string;
  givenName: string | null;
  familyName: string | null;
  fullName: string | null;
  email: string | null;
  createdAt: number;
  updatedAt: number;
}

/** Decision NS-07. */
export type MemberGroup = 'student' | 'instructor' | 'assistant' | 'manager';

export interface MemberRecord {
  id: string;
  contextId: string;
  userId: string;
  /** The roles of the latest launch. */
  groups: MemberGroup[];
  createdAt: number;
  updatedAt: number;
}

interface OrganizationRow {
  id: string;
  title: string;
  issuer: string;
  client: string;
  deployment: string;
  grants_line_item_scope: number;
  created_at: number;
  updated_at: number;
}

interface ContextRow {
  id: string;
  organization_id: string;
  external_id: string;
  name: string;
  label: string | null;
  parent_context_id: string | null;
  sandbox_app_id: string | null;
  created_at: number;
  updated_at: number;
}

interface UserRow {
  id: string;
  organization_id: string;
  external_id: string;
  given_name: string | null;
  family_name: string | null;
  full_name: string | null;
  email: string | null;
  created_at: number;
  updated_at: number;
}

export interface MemberRow {
  id: string;
  context_id: string;
  user_id: string;
  group_names: string;
  created_at: number;
  updated_at: number;
}

export const ORG_COLUMNS = 'id, title, issuer, client, deployment, grants_line_item_scope, created_at, updated_at';
export const CONTEXT_COLUMNS =
  'id, organization_id, external_id, name, label, parent_context_id, sandbox_app_id, created_at, updated_at';
export const USER_COLUMNS =
  'id, organization_id, external_id, given_name, family_name, full_name, email, created_at, updated_at';
export const MEMBER_COLUMNS = 'id, context_id, user_id, group_names, created_at, updated_at';

export function toOrganization(row: OrganizationRow): OrganizationRecord {
  return {
    id: row.id,
    title: row.title,
    issuer: row.issuer,
    client: row.client,
    deployment: row.deployment,
    grantsLineItemScope: bool(row.grants_line_item_scope),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toContext(row: ContextRow): ContextRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    externalId: row.external_id,
    name: row.name,
    label: row.label,
    parentContextId: row.parent_context_id,
    sandboxAppId: row.sandbox_app_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toUser(row: UserRow): UserRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    externalId: row.external_id,
    givenName: row.given_name,
    familyName: row.family_name,
    fullName: row.full_name,
    email: row.email,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toMember(row: MemberRow): MemberRecord {
  return {
    id: row.id,
    contextId: row.context_id,
    userId: row.user_id,
    groups: parseJson<MemberGroup[]>(row.group_names, []),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export class OrganizationsRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** The school of an (issuer, client, deployment); an unseen deployment is a new school. */
  async upsert(input: {
    issuer: string;
    client: string;
    deployment: string;
    title: string;
    grantsLineItemScope?: boolean;
  }): Promise<OrganizationRecord> {
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      await tx.run(
        `INSERT INTO organizations (id, title, issuer, client, deployment, grants_line_item_scope, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (issuer, client, deployment) DO NOTHING`,
        [newId('org'), input.title, input.issuer, input.client, input.deployment, input.grantsLineItemScope ?? true, now, now],
      );
      await tx.run(
        `UPDATE organizations SET title = ?, updated_at = ?
         WHERE issuer = ? AND client = ? AND deployment = ? AND title <> ?`,
        [input.title, now, input.issuer, input.client, input.deployment, input.title],
      );
      const row = await tx.get<OrganizationRow>(
        `SELECT ${ORG_COLUMNS} FROM organizations WHERE issuer = ? AND client = ? AND deployment = ?`,
        [input.issuer, input.client, input.deployment],
      );
      if (!row) throw new Error('organization vanished inside its own transaction');
      return toOrganization(row);
    });
  }

  async get(id: string): Promise<OrganizationRecord | null> {
    const row = await this.ctx.db.get<OrganizationRow>(`SELECT ${ORG_COLUMNS} FROM organizations WHERE id = ?`, [id]);
    return row ? toOrganization(row) : null;
  }

  async find(issuer: string, client: string, deployment: string): Promise<OrganizationRecord | null> {
    const row = await this.ctx.db.get<OrganizationRow>(
      `SELECT ${ORG_COLUMNS} FROM organizations WHERE issuer = ? AND client = ? AND deployment = ?`,
      [issuer, client, deployment],
    );
    return row ? toOrganization(row) : null;
  }

  /** The schools of one deployment ID under one issuer, whatever their client: oldest first. */
  async listByDeployment(issuer: string, deployment: string): Promise<OrganizationRecord[]> {
    const rows = await this.ctx.db.all<OrganizationRow>(
      `SELECT ${ORG_COLUMNS} FROM organizations WHERE issuer = ? AND deployment = ? ORDER BY created_at, id`,
      [issuer, deployment],
    );
    return rows.map(toOrganization);
  }

  /**
   * Moves a school to another client of the same issuer (the Sandbox's LMS registered the service again
   * after losing its store, decision LTI-46). Null when the school is gone; a unique violation when the
   * client already has that deployment.
   */
  async setClient(id: string, client: string): Promise<OrganizationRecord | null> {
    await this.ctx.db.run('UPDATE organizations SET client = ?, updated_at = ? WHERE id = ?', [client, this.ctx.clock.nowMs(), id]);
    return this.get(id);
  }

  async setGrantsLineItemScope(id: string, grants: boolean): Promise<OrganizationRecord | null> {
    await this.ctx.db.run('UPDATE organizations SET grants_line_item_scope = ?, updated_at = ? WHERE id = ?', [
      grants,
      this.ctx.clock.nowMs(),
      id,
    ]);
    return this.get(id);
  }
}

export class ContextsRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** The course an LMS names; its display data follows the latest launch (renames, re-terms). */
  async upsert(input: {
    organizationId: string;
    externalId: string;
    name: string;
    label?: string | null;
  }): Promise<ContextRecord> {
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      await tx.run(
        `INSERT INTO contexts (id, organization_id, external_id, name, label, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (organization_id, external_id) DO NOTHING`,
        [newId('ctx'), input.organizationId, input.externalId, input.name, input.label ?? null, now, now],
      );
      // Only a change moves `updated_at`: a launch that repeats the course's name and label is no change
      // (the Sandbox's trial course tells its last reset by it, decision LTI-45).
      if (input.label === null) {
        await tx.run(
          'UPDATE contexts SET name = ?, label = NULL, updated_at = ? WHERE organization_id = ? AND external_id = ? AND (name <> ? OR label IS NOT NULL)',
          [input.name, now, input.organizationId, input.externalId, input.name],
        );
      } else if (input.label !== undefined) {
        await tx.run(
          'UPDATE contexts SET name = ?, label = ?, updated_at = ? WHERE organization_id = ? AND external_id = ? AND (name <> ? OR label IS NULL OR label <> ?)',
          [input.name, input.label, now, input.organizationId, input.externalId, input.name, input.label],
        );
      } else {
        await tx.run('UPDATE contexts SET name = ?, updated_at = ? WHERE organization_id = ? AND external_id = ? AND name <> ?', [
          input.name,
          now,
          input.organizationId,
          input.externalId,
          input.name,
        ]);
      }
      const row = await tx.get<ContextRow>(
        `SELECT ${CONTEXT_COLUMNS} FROM contexts WHERE organization_id = ? AND external_id = ?`,
        [input.organizationId, input.externalId],
      );
      if (!row) throw new Error('context vanished inside its own transaction');
      return toContext(row);
    });
  }

  /** A course the service makes itself (Sandbox trial course, copy); `externalId` defaults to its ID. */
  async create(input: {
    organizationId: string;
    name: string;
    label?: string | null;
    externalId?: string;
    parentContextId?: string | null;
    sandboxAppId?: string | null;
  }): Promise<ContextRecord> {
    const id = newId('ctx');
    const now = this.ctx.clock.nowMs();
    await this.ctx.db.run(
      `INSERT INTO contexts (id, organization_id, external_id, name, label, parent_context_id, sandbox_app_id,
         created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        input.organizationId,
        input.externalId ?? id,
        input.name,
        input.label ?? null,
        input.parentContextId ?? null,
        input.sandboxAppId ?? null,
        now,
        now,
      ],
    );
    const record = await this.get(id);
    if (!record) throw new Error('context vanished after insert');
    return record;
  }

  async get(id: string): Promise<ContextRecord | null> {
    const row = await this.ctx.db.get<ContextRow>(`SELECT ${CONTEXT_COLUMNS} FROM contexts WHERE id = ?`, [id]);
    return row ? toContext(row) : null;
  }

  async findByExternal(organizationId: string, externalId: string): Promise<ContextRecord | null> {
    const row = await this.ctx.db.get<ContextRow>(
      `SELECT ${CONTEXT_COLUMNS} FROM contexts WHERE organization_id = ? AND external_id = ?`,
      [organizationId, externalId],
    );
    return row ? toContext(row) : null;
  }

  async update(id: string, patch: { name?: string; label?: string | null }): Promise<ContextRecord | null> {
    const set = updateSet({ name: patch.name, label: patch.label }, { name: 'name', label: 'label' });
    if (set.sql !== '') {
      await this.ctx.db.run(`UPDATE contexts SET ${set.sql}, updated_at = ? WHERE id = ?`, [
        ...set.params,
        this.ctx.clock.nowMs(),
        id,
      ]);
    }
    return this.get(id);
  }

  /** Records the course a course was copied from, once: a parent already set is kept. */
  async setParentIfUnset(id: string, parentContextId: string): Promise<ContextRecord | null> {
    await this.ctx.db.run('UPDATE contexts SET parent_context_id = ?, updated_at = ? WHERE id = ? AND parent_context_id IS NULL AND id <> ?', [
      parentContextId,
      this.ctx.clock.nowMs(),
      id,
      parentContextId,
    ]);
    return this.get(id);
  }

  /**
   * Releases a course from its tool's Sandbox (a reset releases every copy): the record stays, for the
   * grade attempts made there, but it is no Sandbox course any more. False when there is no such course.
   */
  async releaseFromSandbox(id: string): Promise<boolean> {
    const result = await this.ctx.db.run('UPDATE contexts SET sandbox_app_id = NULL, updated_at = ? WHERE id = ?', [
      this.ctx.clock.nowMs(),
      id,
    ]);
    return result.changes > 0;
  }

  /**
   * A tool's Sandbox courses (its trial course and copies), oldest first. Created in the same millisecond,
   * the trial course still comes before its copy: IDs are random, so they cannot break that tie.
   */
  async listSandbox(appId: string): Promise<ContextRecord[]> {
    const rows = await this.ctx.db.all<ContextRow>(
      `SELECT ${CONTEXT_COLUMNS} FROM contexts WHERE sandbox_app_id = ?
       ORDER BY created_at, CASE WHEN parent_context_id IS NULL THEN 0 ELSE 1 END, id`,
      [appId],
    );
    return rows.map(toContext);
  }

  async listCopies(parentContextId: string): Promise<ContextRecord[]> {
    const rows = await this.ctx.db.all<ContextRow>(
      `SELECT ${CONTEXT_COLUMNS} FROM contexts WHERE parent_context_id = ? ORDER BY created_at, id`,
      [parentContextId],
    );
    return rows.map(toContext);
  }
}

export interface UserInput {
  organizationId: string;
  externalId: string;
  /** For each personal field: undefined keeps what is stored, null clears it. */
  givenName?: string | null;
  familyName?: string | null;
  fullName?: string | null;
  email?: string | null;
}

export class UsersRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** The person an LMS names at one school; the same human at two schools is two users. */
  async upsert(input: UserInput): Promise<UserRecord> {
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      await tx.run(
        `INSERT INTO users (id, organization_id, external_id, given_name, family_name, full_name, email, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (organization_id, external_id) DO NOTHING`,
        [
          newId('usr'),
          input.organizationId,
          input.externalId,
          input.givenName ?? null,
          input.familyName ?? null,
          input.fullName ?? null,
          input.email ?? null,
          now,
          now,
        ],
      );
      const set = updateSet(
        { givenName: input.givenName, familyName: input.familyName, fullName: input.fullName, email: input.email },
        { givenName: 'given_name', familyName: 'family_name', fullName: 'full_name', email: 'email' },
      );
      if (set.sql !== '') {
        await tx.run(`UPDATE users SET ${set.sql}, updated_at = ? WHERE organization_id = ? AND external_id = ?`, [
          ...set.params,
          now,
          input.organizationId,
          input.externalId,
        ]);
      }
      const row = await tx.get<UserRow>(
        `SELECT ${USER_COLUMNS} FROM users WHERE organization_id = ? AND external_id = ?`,
        [input.organizationId, input.externalId],
      );
      if (!row) throw new Error('user vanished inside its own transaction');
      return toUser(row);
    });
  }

  async get(id: string): Promise<UserRecord | null> {
    const row = await this.ctx.db.get<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = ?`, [id]);
    return row ? toUser(row) : null;
  }

  async findByExternal(organizationId: string, externalId: string): Promise<UserRecord | null> {
    const row = await this.ctx.db.get<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users WHERE organization_id = ? AND external_id = ?`,
      [organizationId, externalId],
    );
    return row ? toUser(row) : null;
  }
}

export class MembersRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** The user's membership in the course, with the groups of this launch. */
  async upsert(input: { contextId: string; userId: string; groups: readonly MemberGroup[] }): Promise<MemberRecord> {
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      const groups = JSON.stringify([...new Set(input.groups)]);
      await tx.run(
        `INSERT INTO members (id, context_id, user_id, group_names, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (context_id, user_id) DO NOTHING`,
        [newId('mem'), input.contextId, input.userId, groups, now, now],
      );
      await tx.run(
        'UPDATE members SET group_names = ?, updated_at = ? WHERE context_id = ? AND user_id = ? AND group_names <> ?',
        [groups, now, input.contextId, input.userId, groups],
      );
      const row = await tx.get<MemberRow>(`SELECT ${MEMBER_COLUMNS} FROM members WHERE context_id = ? AND user_id = ?`, [
        input.contextId,
        input.userId,
      ]);
      if (!row) throw new Error('member vanished inside its own transaction');
      return toMember(row);
    });
  }

  async get(id: string): Promise<MemberRecord | null> {
    const row = await this.ctx.db.get<MemberRow>(`SELECT ${MEMBER_COLUMNS} FROM members WHERE id = ?`, [id]);
    return row ? toMember(row) : null;
  }

  /** The member only if it belongs to the course: a member ID of another course must look unknown. */
  async getInContext(contextId: string, memberId: string): Promise<MemberRecord | null> {
    const row = await this.ctx.db.get<MemberRow>(`SELECT ${MEMBER_COLUMNS} FROM members WHERE id = ? AND context_id = ?`, [
      memberId,
      contextId,
    ]);
    return row ? toMember(row) : null;
  }

  async find(contextId: string, userId: string): Promise<MemberRecord | null> {
    const row = await this.ctx.db.get<MemberRow>(`SELECT ${MEMBER_COLUMNS} FROM members WHERE context_id = ? AND user_id = ?`, [
      contextId,
      userId,
    ]);
    return row ? toMember(row) : null;
  }

  async listByContext(contextId: string): Promise<MemberRecord[]> {
    const rows = await this.ctx.db.all<MemberRow>(
      `SELECT ${MEMBER_COLUMNS} FROM members WHERE context_id = ? ORDER BY created_at, id`,
      [contextId],
    );
    return rows.map(toMember);
  }
}
