/** The node options of a checkout's `npm start` (see start-flags.mjs). */
export function startNodeFlags(root: string): string[];
