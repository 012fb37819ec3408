// Building the page from API data. Text always goes in as text nodes, never as markup: every string
// shown here (tool names, picker labels, error details) was written by someone else.

/** `document.getElementById` that fails loudly when the page and the script disagree. */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the dashboard page has no #${id}`);
  return el;
}

/** `h('button', {type: 'button', onclick: f}, 'Place')`: attributes, listeners and children in one call. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(typeof child === 'object' ? child : String(child));
  }
  return el;
}

/** Shows `message` (an API `detail`) in an alert element, or hides it for null. */
export function say(el, message) {
  el.textContent = message ?? '';
  el.hidden = message === null || message === undefined || message === '';
}

/** Disables `button` while `work` runs, so one click sends one request. */
export async function busy(button, work) {
  button.disabled = true;
  try {
    return await work();
  } finally {
    button.disabled = false;
  }
}

export function badge(value) {
  return h('span', { class: `badge ${value}` }, value);
}

/** An ISO 8601 time in the viewer's own time zone and locale; the exact UTC value is the element's title. */
export function localTime(iso) {
  if (iso === null || iso === undefined || iso === '') return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const text = date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  return h('time', { datetime: iso, title: iso }, text);
}

/** `app_3f9c…k0m`: the type prefix and both ends of the random part, enough to tell IDs apart on screen. */
export function shortened(id) {
  const cut = id.indexOf('_');
  const rest = cut === -1 ? id : id.slice(cut + 1);
  if (rest.length <= 10) return id;
  return `${cut === -1 ? '' : id.slice(0, cut + 1)}${rest.slice(0, 4)}…${rest.slice(-4)}`;
}

/**
 * Copies `text()` to the clipboard and says so on the button for a moment. Falls back to selecting a
 * temporary field and `execCommand('copy')` where the Clipboard API is refused.
 */
export function copyButton(text, label) {
  const button = h('button', { type: 'button', class: 'small copy', 'aria-label': label }, 'Copy');
  button.addEventListener('click', () => {
    const value = text();
    // The accessible name keeps containing the visible word (axe: label-content-name-mismatch).
    const done = (ok) => {
      button.textContent = ok ? 'Copied' : 'Copy failed';
      button.setAttribute('aria-label', `${label}: ${ok ? 'copied' : 'copy failed'}`);
      setTimeout(() => {
        button.textContent = 'Copy';
        button.setAttribute('aria-label', label);
      }, 2000);
    };
    const fallback = () => {
      const field = h('textarea', { class: 'offscreen', readonly: true, 'aria-hidden': 'true' });
      field.value = value;
      document.body.append(field);
      field.select();
      let ok = false;
      try {
        ok = document.execCommand('copy');
      } catch {
        ok = false;
      }
      field.remove();
      done(ok);
    };
    if (navigator.clipboard?.writeText) navigator.clipboard.writeText(value).then(() => done(true), fallback);
    else fallback();
  });
  return button;
}

/** An ID shortened for the eye, whole in its title and `data-id`, with a button that copies it whole. */
export function idChip(id) {
  if (id === null || id === undefined || id === '') return '';
  return h('span', { class: 'id', 'data-id': id },
    h('code', { title: id }, shortened(id)),
    copyButton(() => id, `Copy ${id}`));
}

/**
 * Gives every body cell of a `table.stack` its column's heading as `data-label`: on a narrow screen the
 * stylesheet lays each row out as a card, each cell under its heading, instead of a table wider than the page.
 */
export function labelCells(table) {
  const headings = [...table.tHead.rows[0].cells].map((th) => th.textContent);
  for (const row of table.tBodies[0].rows) {
    [...row.cells].forEach((cell, i) => cell.setAttribute('data-label', headings[i] ?? ''));
  }
}

/** Shows a one-time secret in its box, with a copy button, until dismissed. */
export function revealOnce(prefix, value) {
  byId(`${prefix}-value`).value = value;
  byId(`${prefix}-copy`).replaceChildren(copyButton(() => byId(`${prefix}-value`).value, 'Copy it'));
  byId(prefix).hidden = false;
}

export function forgetSecret(prefix) {
  byId(`${prefix}-value`).value = '';
  byId(`${prefix}-copy`).replaceChildren();
  byId(prefix).hidden = true;
}
