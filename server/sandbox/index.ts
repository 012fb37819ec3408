/**
 * The Sandbox (decisions GAP-24, GAP-38, GAP-39, S-09 to S-11): a tool's private trial course with a
 * trial user in every role, its copies, and the picker, placements, launches, reset and Grades tab a
 * person uses to try the tool for real. The dashboard's Sandbox handlers and the tests call these.
 */
export * from './courses.js';
export * from './trial-people.js';
export * from './flow.js';
export * from './gate.js';
export * from './reset.js';
