// Reduction of tool-supplied picker text to plain text (decision GAP-10). The picker shows these
// strings as text, never as HTML, so this is about what the instructor reads, not about
// sanitising: a tool that writes "<b>Quiz</b> &amp; notes" should read "Quiz & notes".
//
// Order matters: tags are removed from the raw text first and entities are decoded afterwards,
// segment by segment, so "&lt;b&gt;" becomes the visible text "<b>" and is not then taken for a tag.

const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&', AMP: '&', lt: '<', LT: '<', gt: '>', GT: '>', quot: '"', QUOT: '"', apos: "'",
  nbsp: '\u00a0', ensp: '\u2002', emsp: '\u2003', thinsp: '\u2009', shy: '\u00ad',
  copy: '\u00a9', reg: '\u00ae', trade: '\u2122', hellip: '\u2026', mdash: '\u2014', ndash: '\u2013',
  lsquo: '\u2018', rsquo: '\u2019', sbquo: '\u201a', ldquo: '\u201c', rdquo: '\u201d', bdquo: '\u201e',
  laquo: '\u00ab', raquo: '\u00bb', middot: '\u00b7', bull: '\u2022', deg: '\u00b0', plusmn: '\u00b1',
  times: '\u00d7', divide: '\u00f7', frac12: '\u00bd', frac14: '\u00bc', frac34: '\u00be',
  euro: '\u20ac', pound: '\u00a3', yen: '\u00a5', cent: '\u00a2', sect: '\u00a7', para: '\u00b6',
  iexcl: '\u00a1', iquest: '\u00bf', larr: '\u2190', rarr: '\u2192', uarr: '\u2191', darr: '\u2193',
  check: '\u2713', le: '\u2264', ge: '\u2265', ne: '\u2260', minus: '\u2212',
};

/** Elements that end a line when rendered: `</p>`, `</li>` and so on become a line break. */
const BLOCK_ENDS = new Set([
  'p', 'div', 'li', 'ul', 'ol', 'dl', 'dt', 'dd', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'tr', 'table',
  'blockquote', 'pre', 'section', 'article', 'header', 'footer', 'aside', 'nav', 'figure', 'figcaption',
  'address', 'details', 'summary', 'form', 'fieldset', 'main',
]);
/** Elements whose content is never visible text. */
const HIDDEN_CONTENT = new Set(['script', 'style', 'template', 'noscript']);

export function decodeEntities(text: string): string {
  return text.replace(/&(?:#(\d{1,8})|#[xX]([0-9a-fA-F]{1,7})|([A-Za-z][A-Za-z0-9]{1,31}));/g, (whole, dec?: string, hex?: string, name?: string) => {
    if (name !== undefined) {
      return Object.prototype.hasOwnProperty.call(NAMED_ENTITIES, name) ? (NAMED_ENTITIES[name] as string) : whole;
    }
    const code = dec !== undefined ? parseInt(dec, 10) : parseInt(hex as string, 16);
    // HTML maps NUL, surrogates and values beyond Unicode to the replacement character.
    if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd';
    return String.fromCodePoint(code);
  });
}

/**
 * Removes markup the way a browser's tokenizer would see it: `<` starts a tag only before a
 * letter, `/`, `!` or `?`, so "a < b" stays text. Quoted attribute values may contain `>`.
 * An unterminated tag at the end is dropped, as a browser drops it.
 */
function stripTags(html: string): string {
  let out = '';
  let i = 0;
  const n = html.length;
  while (i < n) {
    const lt = html.indexOf('<', i);
    if (lt < 0) {
      out += decodeEntities(html.slice(i));
      break;
    }
    out += decodeEntities(html.slice(i, lt));
    const next = html[lt + 1] ?? '';
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      i = end < 0 ? n : end + 3;
      continue;
    }
    const closing = next === '/';
    const nameStart = closing ? lt + 2 : lt + 1;
    const isTag = /[A-Za-z]/.test(html[nameStart] ?? '') || (!closing && (next === '!' || next === '?'));
    if (!isTag) {
      out += '<';
      i = lt + 1;
      continue;
    }
    let j = nameStart;
    let quote: string | null = null;
    for (; j < n; j++) {
      const c = html[j];
      if (quote !== null) {
        if (c === quote) quote = null;
      } else if (c === '"' || c === "'") {
        quote = c;
      } else if (c === '>') {
        break;
      }
    }
    const name = (/^[A-Za-z][A-Za-z0-9-]*/.exec(html.slice(nameStart, j))?.[0] ?? '').toLowerCase();
    i = j >= n ? n : j + 1;
    if (name === 'br' || name === 'hr' || (closing && BLOCK_ENDS.has(name))) {
      out += '\n';
    } else if (!closing && HIDDEN_CONTENT.has(name)) {
      // Case-insensitive search in place: toLowerCase() can change the length and shift indexes.
      const closer = new RegExp(`</${name}`, 'gi');
      closer.lastIndex = i;
      const end = closer.exec(html)?.index ?? -1;
      if (end < 0) {
        i = n;
      } else {
        const close = html.indexOf('>', end);
        i = close < 0 ? n : close + 1;
      }
    }
  }
  return out;
}

/** C0 and C1 controls other than white space carry nothing a reader can see. */
function dropControls(text: string): string {
  return text.replace(/[\u0000-\u0008\u000e-\u001f\u007f-\u009f]/g, '');
}

/** Cuts at a number of Unicode code points, never inside a surrogate pair (decision GAP-10). */
export function truncateCodePoints(text: string, max: number): string {
  let count = 0;
  let end = 0;
  for (const ch of text) {
    if (count === max) return text.slice(0, end);
    count++;
    end += ch.length;
  }
  return text;
}

/** Labels and descriptions: one line of plain text, cut after reduction. */
export function reduceToPlainText(html: string, maxCodePoints: number): string {
  const flat = dropControls(stripTags(html)).replace(/\s+/g, ' ').trim();
  return truncateCodePoints(flat, maxCodePoints).trimEnd();
}

/**
 * The picker `message`: plain text whose line breaks survive. Spaces collapse within a line,
 * lines are trimmed, and more than one blank line in a row collapses to one.
 */
export function reduceMessage(html: string, maxCodePoints: number): string {
  const text = dropControls(stripTags(html.replace(/\r\n?/g, '\n')))
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return truncateCodePoints(text, maxCodePoints).trimEnd();
}
