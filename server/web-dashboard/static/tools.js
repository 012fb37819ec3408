// The tool list, registration, and a tool's header: status, the platform team's activate and suspend,
// and API key rotation. A key (at registration or rotation) is shown once and kept nowhere.
import { api, appPath, detailOf } from './api.js';
import { badge, busy, byId, h, idChip, say } from './dom.js';

/** ContractVersion in openapi/dashboard/schemas/ContractVersion.yaml, current first. */
export const CONTRACT_VERSIONS = ['2026-09-21', '2026-08-25', '2026-08-19'];

export function fillContractVersions() {
  for (const select of document.querySelectorAll('select.contract-versions')) {
    select.replaceChildren(...CONTRACT_VERSIONS.map((v, i) => h('option', { value: v }, i === 0 ? `${v} (current)` : `${v} (archived)`)));
  }
}

let nextCursor = null;

/** Loads the first page of tools into the sidebar. */
export async function loadToolList(ctx) {
  nextCursor = null;
  byId('tool-list').replaceChildren();
  await loadMoreTools(ctx);
}

export async function loadMoreTools(ctx) {
  const page = await api('GET', '/apps', { query: { cursor: nextCursor } });
  nextCursor = page.next_cursor;
  const list = byId('tool-list');
  for (const tool of page.apps) {
    list.append(
      h('li', {},
        h('button', { type: 'button', 'data-app': tool.id, onclick: () => ctx.go(tool.id, 'settings') },
          badge(tool.status), ' ', tool.name)),
    );
  }
  markCurrent(ctx.appId);
  byId('tool-list-more').hidden = nextCursor === null;
  byId('tool-list-empty').hidden = list.childElementCount > 0;
}

export function markCurrent(appId) {
  for (const button of byId('tool-list').querySelectorAll('button[data-app]')) {
    button.setAttribute('aria-current', String(button.getAttribute('data-app') === appId));
  }
}

export function wireRegistration(ctx) {
  const form = byId('register-form');
  const error = byId('register-error');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = {
      name: String(data.get('name') ?? ''),
      hosting: String(data.get('hosting') ?? ''),
      contract_version: String(data.get('contract_version') ?? ''),
    };
    const description = String(data.get('description') ?? '').trim();
    if (description !== '') body.description = description;
    void busy(form.querySelector('button[type=submit]'), async () => {
      say(error, null);
      try {
        const registered = await api('POST', '/apps', { body });
        form.reset();
        if (registered.api_key !== null) ctx.showSecret(registered.app.id, 'API key', registered.api_key);
        await loadToolList(ctx);
        ctx.go(registered.app.id, 'settings');
      } catch (err) {
        say(error, detailOf(err));
      }
    });
  });
}

/** Fills the tool's header and shows the actions this credential may take. */
export function renderToolHead(ctx, tool) {
  byId('tool-name').textContent = tool.name;
  const status = byId('tool-status');
  status.className = `badge ${tool.status}`;
  status.textContent = tool.status;
  const id = byId('tool-id');
  id.setAttribute('data-id', tool.id);
  id.replaceChildren(idChip(tool.id));
  byId('tool-hosting').textContent = tool.hosting === 'hosted' ? 'hosted' : 'self-hosted';
  byId('tool-key-hint').textContent = tool.api_key_hint ?? 'none (hosted)';
  byId('tool-contract').textContent = tool.contract_version;
  const platform = ctx.identity.kind === 'platform';
  // Only the moves the tool's status allows: a draft or suspended tool can be activated, an active one suspended.
  byId('activate').hidden = !platform || tool.status === 'active';
  byId('suspend').hidden = !platform || tool.status !== 'active';
  byId('rotate-key').hidden = tool.hosting !== 'self_hosted';
  byId('rotate-confirm').hidden = true;
}

export function wireToolActions(ctx) {
  const error = byId('tool-error');
  const transition = (button, action) => {
    button.addEventListener('click', () => {
      void busy(button, async () => {
        say(error, null);
        try {
          ctx.toolChanged(await api('POST', `${appPath(ctx.appId)}/${action}`));
          await loadToolList(ctx);
        } catch (err) {
          say(error, detailOf(err));
        }
      });
    });
  };
  transition(byId('activate'), 'activate');
  transition(byId('suspend'), 'suspend');

  byId('rotate-key').addEventListener('click', () => {
    byId('rotate-confirm').hidden = false;
  });
  byId('rotate-confirm-no').addEventListener('click', () => {
    byId('rotate-confirm').hidden = true;
  });
  const yes = byId('rotate-confirm-yes');
  yes.addEventListener('click', () => {
    void busy(yes, async () => {
      say(error, null);
      try {
        const rotated = await api('POST', `${appPath(ctx.appId)}/rotate-key`);
        byId('rotate-confirm').hidden = true;
        ctx.showSecret(ctx.appId, 'New API key', rotated.api_key);
        ctx.toolChanged(await api('GET', appPath(ctx.appId)));
      } catch (err) {
        say(error, detailOf(err));
      }
    });
  });
}
