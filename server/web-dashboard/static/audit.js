// The audit log page (decision OPS-03): who did what, and when, newest first, in pages.
import { api, detailOf } from './api.js';
import { busy, byId, h, idChip, labelCells, localTime, say } from './dom.js';

let cursor = null;

export async function loadAudit() {
  cursor = null;
  byId('audit-list').tBodies[0].replaceChildren();
  say(byId('audit-error'), null);
  await moreAudit();
}

function actorOf(actor) {
  if (actor.kind === 'platform_token') return h('span', {}, 'Platform token ', h('span', { class: 'muted' }, '(bootstrap)'));
  return h('span', {}, actor.name, ' ', h('span', { class: 'muted' }, actor.kind === 'operator' ? '(operator)' : '(builder)'));
}

function detailOf_(detail) {
  const entries = Object.entries(detail);
  if (entries.length === 0) return '';
  return entries.map(([key, value]) => `${key}: ${Array.isArray(value) ? value.join(', ') : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)}`).join('; ');
}

async function moreAudit() {
  try {
    const page = await api('GET', '/audit-log', { query: { cursor } });
    cursor = page.next_cursor;
    const table = byId('audit-list');
    table.tBodies[0].append(...page.entries.map((entry) =>
      h('tr', { 'data-entry': entry.id, 'data-action': entry.action },
        h('td', {}, localTime(entry.at)),
        h('td', {}, actorOf(entry.actor)),
        h('td', {}, h('code', {}, entry.action)),
        h('td', {}, entry.target === null ? '' : idChip(entry.target)),
        h('td', {}, detailOf_(entry.detail)),
      )));
    labelCells(table);
    byId('audit-empty').hidden = table.tBodies[0].rows.length > 0;
    byId('audit-more').hidden = cursor === null;
  } catch (err) {
    say(byId('audit-error'), detailOf(err));
  }
}

export function wireAudit() {
  const more = byId('audit-more');
  more.addEventListener('click', () => void busy(more, moreAudit));
}
