/**
 * Decision IDs (`S-07`, `PERF-60`, `LTI-16`) cited in code, specs and docs must name a decision that a file
 * in docs/decisions/ defines (decision KIT-61): a comment that says "decision PERF-60" is how a reader finds
 * why a line is the way it is, so a citation that leads nowhere is a broken link.
 *
 * A decision is defined by an entry that starts `- **ID` in a docs/decisions/*.md file. A citation is the
 * ID anywhere else as a word of its own; a quoted value that only looks like one (`'S-1001'`, an LMS's
 * organisation code in a recorded message) is data, not a citation.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The prefixes of docs/decisions/README.md. */
export const DECISION_PREFIXES = ['L', 'NS', 'GAP', 'S', 'OBJ', 'PERF', 'H', 'OPS', 'LTI', 'KIT', 'CI'] as const;

const CITATION = new RegExp(`(?<![\\w'"-])(${DECISION_PREFIXES.join('|')})-(\\d{1,4})(?![\\w'"])`, 'g');
const DEFINITION = new RegExp(`^- \\*\\*((?:${DECISION_PREFIXES.join('|')})-\\d{1,4})\\b`, 'gm');

/** `S-7` and `S-07` are one decision: IDs compare by prefix and number. */
export const normalId = (prefix: string, digits: string): string => `${prefix}-${Number(digits)}`;

export function definedDecisions(decisionsDir: string): Map<string, string> {
  const defined = new Map<string, string>();
  for (const name of readdirSync(decisionsDir).filter((f) => f.endsWith('.md')).sort()) {
    const text = readFileSync(path.join(decisionsDir, name), 'utf8');
    for (const m of text.matchAll(DEFINITION)) {
      const [prefix, digits] = m[1]!.split('-') as [string, string];
      defined.set(normalId(prefix, digits), name);
    }
  }
  return defined;
}

export interface Citation {
  file: string;
  line: number;
  id: string;
}

/** Citations in `text` of IDs that `defined` does not hold. */
export function unresolvedCitations(file: string, text: string, defined: ReadonlyMap<string, string>): Citation[] {
  const found: Citation[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    for (const m of line.matchAll(CITATION)) {
      if (!defined.has(normalId(m[1]!, m[2]!))) found.push({ file, line: i + 1, id: m[0] });
    }
  });
  return found;
}
