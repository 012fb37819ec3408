/**
 * Just enough Markdown for the docs site's pages made from the repository's READMEs (the kit's README, the
 * mock instructions): headings, paragraphs, lists, fenced code, tables, inline code, emphasis and links.
 * Anything else stays readable text. Links to other repository files are dropped to their text, since the
 * site does not carry those files.
 */
function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Code spans and links, found left to right, so a link whose text is a code span (`[`jose`](…)`) is a link. */
const INLINE = /(`[^`]+`)|\[((?:`[^`]*`|[^\]`])+)\]\(([^)\s]+)\)/g;

function inline(text: string): string {
  let out = '';
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    out += plain(text.slice(last, match.index));
    const [whole, code, label, href] = match;
    if (code !== undefined) {
      out += `<code>${esc(code.slice(1, -1))}</code>`;
    } else {
      const content = inline(label ?? '');
      // Links to other repository files are dropped to their text: the site does not carry those files.
      out += /^(https?:\/\/|#)/.test(href ?? '') ? `<a href="${esc(href ?? '')}">${content}</a>` : content;
    }
    last = match.index + whole.length;
  }
  return out + plain(text.slice(last));
}

function plain(text: string): string {
  return esc(text).replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
}

export function markdownToHtml(markdown: string): string {
  const lines = markdown.replace(/<!--[\s\S]*?-->/g, '').split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.startsWith('```')) {
      const code: string[] = [];
      i += 1;
      while (i < lines.length && !(lines[i] as string).startsWith('```')) code.push(lines[i++] as string);
      i += 1;
      out.push(`<pre><code>${esc(code.join('\n'))}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,4}) (.*)$/.exec(line);
    if (heading) {
      const level = Math.min((heading[1] as string).length + 1, 4);
      out.push(`<h${level}>${inline(heading[2] as string)}</h${level}>`);
      i += 1;
      continue;
    }
    if (line.startsWith('|')) {
      const rows: string[][] = [];
      while (i < lines.length && (lines[i] as string).startsWith('|')) {
        const cells = (lines[i] as string).replace(/^\||\|$/g, '').split('|').map((c) => c.trim());
        if (!cells.every((c) => /^:?-+:?$/.test(c))) rows.push(cells);
        i += 1;
      }
      const [head, ...body] = rows;
      out.push(
        `<div class="table"><table><thead><tr>${(head ?? []).map((c) => `<th>${inline(c)}</th>`).join('')}</tr></thead><tbody>${body
          .map((r) => `<tr>${r.map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`)
          .join('')}</tbody></table></div>`,
      );
      continue;
    }
    if (/^\s*- /.test(line)) {
      const items: string[] = [];
      while (i < lines.length && /^\s*- |^\s{2,}\S/.test(lines[i] as string)) {
        const item = lines[i] as string;
        if (/^\s*- /.test(item)) items.push(item.replace(/^\s*- /, ''));
        else items[items.length - 1] += ` ${item.trim()}`;
        i += 1;
      }
      out.push(`<ul>${items.map((item) => `<li>${inline(item)}</li>`).join('')}</ul>`);
      continue;
    }
    if (line.trim() === '') {
      i += 1;
      continue;
    }
    const paragraph: string[] = [];
    while (i < lines.length && (lines[i] as string).trim() !== '' && !/^(```|#{1,4} |\||\s*- )/.test(lines[i] as string)) paragraph.push(lines[i++] as string);
    out.push(`<p>${inline(paragraph.join(' '))}</p>`);
  }
  return out.join('\n');
}

/** The section of a Markdown document from the heading `title` to the next heading of the same level. */
export function markdownSection(markdown: string, title: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^#+ /.test(l) && l.replace(/^#+ /, '') === title);
  if (start < 0) throw new Error(`no section "${title}"`);
  const level = (/^#+/.exec(lines[start] as string) as RegExpExecArray)[0].length;
  let end = start + 1;
  while (end < lines.length && !new RegExp(`^#{1,${level}} `).test(lines[end] as string)) end += 1;
  return lines.slice(start, end).join('\n');
}
