/**
 * Text laid out for a terminal: help in two aligned columns, long lines wrapped at word boundaries to the
 * terminal's width (at most 100 columns, which stays readable on a wide terminal and in a pasted log).
 */

export const MAX_WIDTH = 100;
const MIN_WIDTH = 40;
/** A left column wider than this puts its description on the next line instead of pushing it right. */
const MAX_LEFT = 30;

/** The width to lay text out for: the terminal's when known, else 100, within 40 to 100. */
export function layoutWidth(terminalColumns: number | undefined): number {
  if (terminalColumns === undefined || !Number.isFinite(terminalColumns) || terminalColumns <= 0) return MAX_WIDTH;
  return Math.max(MIN_WIDTH, Math.min(MAX_WIDTH, Math.floor(terminalColumns)));
}

/**
 * `text` in lines of at most `width` characters, broken at spaces; the first line starts after `first`
 * characters already written, the others are indented by `indent`. A word longer than a line stays whole.
 */
export function wrap(text: string, width: number, indent = 0, first = indent): string[] {
  const lines: string[] = [];
  let line = '';
  let room = width - first;
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > room) {
      lines.push(line);
      line = '';
      room = width - indent;
    }
    line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.map((l, i) => (i === 0 ? l : `${' '.repeat(indent)}${l}`));
}

/** Rows of `[term, description]` in two aligned columns, indented by `indent`, descriptions wrapped. */
export function columns(rows: ReadonlyArray<readonly [string, string]>, width: number, indent = 2): string[] {
  const fitting = rows.map(([term]) => term.length).filter((n) => n <= MAX_LEFT);
  const left = Math.max(0, ...fitting);
  const start = indent + left + 2;
  const out: string[] = [];
  for (const [term, description] of rows) {
    const head = `${' '.repeat(indent)}${term}`;
    if (term.length > left) {
      out.push(head);
      out.push(`${' '.repeat(start)}${wrap(description, width, start).join('\n')}`);
    } else {
      out.push(`${head.padEnd(start)}${wrap(description, width, start).join('\n')}`);
    }
  }
  return out.flatMap((l) => l.split('\n'));
}
