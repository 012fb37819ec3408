/**
 * LMS roles to `user.groups` (decision NS-07). LMSes send LTI role URIs
 * (`http://purl.imsglobal.org/vocab/lis/v2/membership#Learner`, `...membership/Instructor#TeachingAssistant`,
 * `...institution/person#Administrator`) or short names (`Learner`, `Instructor`); only the last segment
 * decides, so a sub-role maps by what it is (a teaching assistant is not an instructor).
 */
import { schemas } from '../../generated/2026-09-21/schemas.js';
import type { MemberGroup } from '../store/index.js';

/**
 * The spec's `user.groups` values, in its order (lockstep, decisions KIT-04, KIT-20). The store keeps a
 * member's groups as a fixed set, so a value added to the spec fails to compile here, the one place to change.
 */
export const GROUP_ORDER: readonly MemberGroup[] = schemas.LaunchClaims.properties.user.properties.groups.items.enum;

/** Groups whose launches carry the person's name and email. */
export const STAFF_GROUPS: readonly MemberGroup[] = ['instructor', 'assistant', 'manager'];

const ROLE_TO_GROUP: Readonly<Record<string, MemberGroup>> = {
  learner: 'student',
  student: 'student',
  instructor: 'instructor',
  teacher: 'instructor',
  teachingassistant: 'assistant',
  administrator: 'manager',
  contentdeveloper: 'manager',
};

function roleName(role: string): string {
  const tail = role.split(/[#/]/).filter((part) => part !== '').pop() ?? '';
  return tail.toLowerCase().replace(/[^a-z]/g, '');
}

/** Deduplicated, in a fixed order; unknown roles map to nothing, so the result can be empty. */
export function groupsFromLmsRoles(roles: readonly string[]): MemberGroup[] {
  const found = new Set<MemberGroup>();
  for (const role of roles) {
    const group = ROLE_TO_GROUP[roleName(role)];
    if (group) found.add(group);
  }
  return GROUP_ORDER.filter((g) => found.has(g));
}

export function isStaff(groups: readonly string[]): boolean {
  return groups.some((g) => (STAFF_GROUPS as readonly string[]).includes(g));
}
