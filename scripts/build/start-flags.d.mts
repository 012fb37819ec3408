/** The node options of a checkout's `npm start` (see start-flags.mjs). */
export function startNodeFlags(root: string): string[];
/** The environment a checkout's start script sets for node (see start-flags.mjs). */
export function startNodeEnv(root: string): Record<string, string>;
