/**
 * Every command module of `tis`, one line each: `bin/tis.ts` gathers the `commands` of every export here,
 * in this order, for dispatch and for `tis --help`. To add a module, write `bin/commands/<name>.ts`
 * exporting `commands: Command[]` and add its line.
 */
export { commands as tools } from './tools.js';
export { commands as sandbox } from './sandbox.js';
export { commands as platform } from './platform.js';
export { commands as lms } from './lms.js';
export { commands as store } from './store.js';
