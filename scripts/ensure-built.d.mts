/** Why the checkout at `root` needs a build before `npm start` runs it, or null (see ensure-built.mjs). */
export function reasonToBuild(root: string, nodeVersion?: string): string | null;
