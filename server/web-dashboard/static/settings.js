// The Settings tab: a partial update of the fields the person changed. The URL rules are the service's;
// a refused value is shown with the service's message, which names the field and the rule.
import { api, appPath, detailOf } from './api.js';
import { busy, byId, say } from './dom.js';
import { loadToolList } from './tools.js';

const TEXT_FIELDS = ['name', 'description', 'logo_url', 'callback_url', 'provision_url', 'locations_url', 'contract_version'];
const URL_FIELDS = ['callback_url', 'provision_url', 'locations_url'];

let shown = null;

export function renderSettings(tool) {
  shown = tool;
  const form = byId('settings-form');
  for (const field of TEXT_FIELDS) form.elements.namedItem(field).value = tool[field] ?? '';
  const hosted = tool.hosting === 'hosted';
  for (const field of URL_FIELDS) form.elements.namedItem(field).disabled = hosted;
  byId('settings-hosted-note').hidden = !hosted;
  // URLs only the development switch accepts are flagged by the service (H-12): say so beside the form.
  const devOnly = tool.development_only_urls ?? [];
  byId('settings-dev-fields').textContent = devOnly.join(', ');
  byId('settings-dev-note').hidden = devOnly.length === 0;
  byId('settings-saved').hidden = true;
  say(byId('settings-error'), null);
}

export function wireSettings(ctx) {
  const form = byId('settings-form');
  const error = byId('settings-error');
  const saved = byId('settings-saved');
  form.addEventListener('input', () => {
    saved.hidden = true;
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!shown) return;
    const patch = {};
    for (const field of TEXT_FIELDS) {
      const input = form.elements.namedItem(field);
      if (input.disabled) continue;
      const value = input.value.trim();
      if (value === (shown[field] ?? '')) continue;
      // An emptied optional field is cleared; the service decides which fields may be cleared.
      patch[field] = value === '' && field !== 'name' && field !== 'callback_url' ? null : value;
    }
    void busy(form.querySelector('button[type=submit]'), async () => {
      say(error, null);
      saved.hidden = true;
      try {
        const tool = await api('PATCH', appPath(ctx.appId), { body: patch });
        ctx.toolChanged(tool);
        saved.hidden = false;
        if ('name' in patch) await loadToolList(ctx);
      } catch (err) {
        say(error, detailOf(err));
      }
    });
  });
}
