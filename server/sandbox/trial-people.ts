/**
 * The Sandbox's five trial people (decision GAP-24): one per role the contract names, two students, the
 * same in every Sandbox course of a tool. Kept apart from courses.ts because the Sandbox LMS's own modules
 * (lms-sandbox.ts, lms-courses.ts, older-courses.ts) need them and courses.ts needs those modules.
 */
import type { components } from '../../generated/dashboard/types.js';
import type { MemberGroup, UserRecord } from '../store/index.js';

export type SandboxRole = components['schemas']['SandboxRole'];

export const SANDBOX_ROLES: readonly SandboxRole[] = ['instructor', 'assistant', 'manager', 'student_1', 'student_2'];

export interface TrialPerson {
  givenName: string;
  familyName: string;
  email: string;
  groups: MemberGroup[];
}

export const TRIAL_PEOPLE: Readonly<Record<SandboxRole, TrialPerson>> = {
  instructor: { givenName: 'Irene', familyName: 'Instructor', email: 'instructor@sandbox.example.org', groups: ['instructor'] },
  assistant: { givenName: 'Ari', familyName: 'Assistant', email: 'assistant@sandbox.example.org', groups: ['assistant'] },
  manager: { givenName: 'Mona', familyName: 'Manager', email: 'manager@sandbox.example.org', groups: ['manager'] },
  student_1: { givenName: 'Sam', familyName: 'Student', email: 'student1@sandbox.example.org', groups: ['student'] },
  student_2: { givenName: 'Sasha', familyName: 'Student', email: 'student2@sandbox.example.org', groups: ['student'] },
};

/** The trial user's LMS ID in the Sandbox school: one person per role, in every Sandbox course of the tool. */
export function trialUserExternalId(role: SandboxRole): string {
  return `sandbox-${role}`;
}

export function roleOfTrialUser(user: Pick<UserRecord, 'externalId'> | null): SandboxRole | null {
  if (!user) return null;
  return SANDBOX_ROLES.find((role) => trialUserExternalId(role) === user.externalId) ?? null;
}
