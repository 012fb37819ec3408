// The platform team's pages for people: builders (the first builder of a fresh install is created here) and
// named operators (decision OPS-02). A new token is shown once, with a copy button, and kept nowhere.
import { api, detailOf } from './api.js';
import { badge, busy, byId, forgetSecret, h, idChip, labelCells, localTime, revealOnce, say } from './dom.js';

let builderCursor = null;

export async function loadBuilders() {
  builderCursor = null;
  byId('builder-list').tBodies[0].replaceChildren();
  await moreBuilders();
}

async function moreBuilders() {
  const error = byId('builders-error');
  try {
    const page = await api('GET', '/builders', { query: { cursor: builderCursor } });
    builderCursor = page.next_cursor;
    const table = byId('builder-list');
    table.tBodies[0].append(...page.builders.map((b) =>
      h('tr', { 'data-builder': b.id }, h('td', {}, b.name), h('td', {}, b.email), h('td', {}, idChip(b.id)), h('td', {}, localTime(b.created)))));
    labelCells(table);
    byId('builder-list-empty').hidden = table.tBodies[0].rows.length > 0;
    byId('builder-list-more').hidden = builderCursor === null;
  } catch (err) {
    say(error, detailOf(err));
  }
}

export async function loadOperators() {
  const error = byId('operators-error');
  try {
    const list = await api('GET', '/operators');
    const table = byId('operator-list');
    table.tBodies[0].replaceChildren(...list.operators.map((o) => {
      const status = o.revoked === null ? badge('active') : h('span', {}, badge('revoked'), ' ', localTime(o.revoked));
      const revoke = o.revoked === null ? h('button', { type: 'button', class: 'small danger', 'aria-label': `Revoke ${o.name}` }, 'Revoke') : null;
      revoke?.addEventListener('click', () => {
        void busy(revoke, async () => {
          say(error, null);
          try {
            await api('DELETE', `/operators/${encodeURIComponent(o.id)}`);
            await loadOperators();
          } catch (err) {
            say(error, detailOf(err));
          }
        });
      });
      return h('tr', { 'data-operator': o.id },
        h('td', {}, o.name, h('br'), idChip(o.id)), h('td', {}, o.email), h('td', {}, h('code', {}, o.token_hint)),
        h('td', {}, localTime(o.created)), h('td', {}, status, revoke ? ' ' : null, revoke));
    }));
    labelCells(table);
    byId('operator-list-empty').hidden = list.operators.length > 0;
  } catch (err) {
    say(error, detailOf(err));
  }
}

function wirePersonForm(form, error, create) {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { name: String(data.get('name') ?? ''), email: String(data.get('email') ?? '').trim() };
    // The button pressed says what happens next (the builder form has two).
    const submitter = event.submitter instanceof HTMLButtonElement ? event.submitter : form.querySelector('button[type=submit]');
    void busy(submitter, async () => {
      say(error, null);
      try {
        await create(body, submitter.value);
        form.reset();
      } catch (err) {
        say(error, detailOf(err));
      }
    });
  });
}

/**
 * `signInAs(token)` replaces this tab's credential: "Create and sign in as this builder" takes the platform
 * team from a fresh install to registering its first tool in one step (decision OPS-42). The builder's
 * token is then held by this tab's session alone, as any token signed in with; it is not shown.
 */
export function wirePeople(signInAs) {
  wirePersonForm(byId('builder-form'), byId('builders-error'), async (body, then) => {
    const created = await api('POST', '/builders', { body });
    if (then === 'sign-in') {
      await signInAs(created.token);
      return;
    }
    byId('builder-secret-name').textContent = `${created.builder.name} <${created.builder.email}>`;
    revealOnce('builder-secret', created.token);
    await loadBuilders();
  });
  wirePersonForm(byId('operator-form'), byId('operators-error'), async (body) => {
    const created = await api('POST', '/operators', { body });
    byId('operator-secret-name').textContent = `${created.operator.name} <${created.operator.email}>`;
    revealOnce('operator-secret', created.token);
    await loadOperators();
  });
  byId('builder-secret-dismiss').addEventListener('click', () => forgetSecret('builder-secret'));
  byId('operator-secret-dismiss').addEventListener('click', () => forgetSecret('operator-secret'));
  const more = byId('builder-list-more');
  more.addEventListener('click', () => void busy(more, moreBuilders));
}

/** Leaving a page forgets the tokens it showed. */
export function forgetPeopleSecrets() {
  forgetSecret('builder-secret');
  forgetSecret('operator-secret');
}
