// The picker as the instructor sees it (openapi/dashboard/schemas/Picker.yaml): the tool's message first,
// the top-level locations, then the groups, collapsed, each with the count of distinct locations below it.
import { badge, h, localTime } from './dom.js';

export function renderPicker(container, picker, onPlace) {
  const parts = [];
  if (picker.message !== null) parts.push(h('p', { class: 'picker-message', 'data-picker': 'message' }, picker.message));
  if (picker.locations.length === 0 && picker.groups.length === 0) {
    parts.push(h('p', { class: 'muted' }, 'The tool offers nothing to place here.'));
  }
  if (picker.locations.length > 0) parts.push(locationList(picker.locations, onPlace));
  for (const group of picker.groups) parts.push(groupOf(group, 1, onPlace));
  parts.push(h('p', { class: 'muted' }, 'Fetched ', localTime(picker.fetched), '.'));
  container.replaceChildren(...parts);
  container.hidden = false;
}

function groupOf(group, level, onPlace) {
  return h('details', { class: 'group', 'data-level': level },
    h('summary', {}, group.label, ' ', h('span', { class: 'muted' }, `(${group.count})`)),
    group.description === null ? null : h('p', { class: 'muted' }, group.description),
    group.locations.length > 0 ? locationList(group.locations, onPlace) : null,
    group.groups.map((sub) => groupOf(sub, level + 1, onPlace)),
    group.locations.length === 0 && group.groups.length === 0 ? h('p', { class: 'muted' }, 'Empty.') : null,
  );
}

function locationList(locations, onPlace) {
  return h('ul', {}, locations.map((location) =>
    h('li', { class: 'location', 'data-extid': location.extid },
      h('span', { class: 'label' }, location.label),
      badge(location.type),
      location.points === null ? null : h('span', {}, `${location.points} points`),
      location.description === null ? null : h('span', { class: 'description' }, location.description),
      h('code', { class: 'muted' }, location.extid),
      h('button', { type: 'button', class: 'small', 'aria-label': `Place ${location.label}`, onclick: (event) => onPlace(location, event.currentTarget) }, 'Place'),
    ),
  ));
}
