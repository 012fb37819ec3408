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
