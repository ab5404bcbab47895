// #/cluster/<name>/events?type=&node=&q=: the cluster's event log, newest first, filtered by
// event type, node and text. The filters live in the address, so a filtered view is a link.
import { call, eventsAfter } from './api.js';
import { eventTone, fill, h, link, route, when } from './dom.js';
import { clusterCrumbs, clusterTabs } from './ui.js';

// Rows drawn at most; the count above the table says how many more match.
const MAX_ROWS = 500;
// Events kept in the page at most (the oldest go first).
const MAX_KEPT = 50000;

export function eventsView(name, query) {
  const filters = { type: query.get('type') || '', node: query.get('node') || '',
                    q: query.get('q') || '' };
  const typeSelect = h('select', { id: 'filter-type', 'aria-label': 'Event type' });
  const nodeSelect = h('select', { id: 'filter-node', 'aria-label': 'Node' });
  const text = h('input', { id: 'filter-text', type: 'search', placeholder: 'Text in the event',
                            'aria-label': 'Text', value: filters.q });
  const clear = h('button', { type: 'button', class: 'quiet small', id: 'filter-clear' },
                  'Clear filters');
  const count = h('span', { class: 'muted', id: 'events-count' });
  const tbody = h('tbody');
  const el = h('div', { class: 'view', id: 'events-view' },
    h('div', { class: 'view-head' }, h('h1', null, 'Events'), count),
    h('div', { class: 'filters panel' },
      h('label', null, 'Type', typeSelect), h('label', null, 'Node', nodeSelect),
      h('label', { class: 'grow' }, 'Text', text), clear),
    h('section', { class: 'panel' },
      h('table', { class: 'grid events', id: 'events' },
        h('thead', null, h('tr', null, h('th', { class: 'time' }, 'Time'), h('th', null, 'Type'),
                             h('th', null, 'Node'), h('th', null, 'Description'))),
        tbody)));
  let events = [];
  let lastId = 0;
  let drawnKey = '';

  function onFilter() {
    filters.type = typeSelect.value;
    filters.node = nodeSelect.value;
    filters.q = text.value;
    // The address follows the filters without a navigation (which would redraw the view).
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) params.set(k, v);
    const qs = params.toString();
    history.replaceState(null, '', route('cluster', name, 'events') + (qs ? '?' + qs : ''));
    draw(true);
  }
  typeSelect.addEventListener('change', onFilter);
  nodeSelect.addEventListener('change', onFilter);
  text.addEventListener('input', onFilter);
  clear.addEventListener('click', () => {
    typeSelect.value = '';
    nodeSelect.value = '';
    text.value = '';
    onFilter();
  });

  function options(select, values, allLabel, current) {
    const want = [''].concat(values);
    if (current && !want.includes(current)) want.push(current);
    const have = [...select.options].map((o) => o.value);
    if (have.join('\n') === want.join('\n')) return;
    fill(select, want.map((v) => h('option', { value: v }, v || allLabel)));
    select.value = current;
  }

  function matches(e) {
    if (filters.type && e.EventType !== filters.type) return false;
    if (filters.node === '(cluster)' && e.NodeName) return false;
    if (filters.node && filters.node !== '(cluster)' && e.NodeName !== filters.node) return false;
    if (filters.q) {
      const hay = [e.EventType, e.NodeName, e.InstanceId, e.InstanceGroupName, e.Description,
                   e.ResourceType].join(' ').toLowerCase();
      if (!hay.includes(filters.q.toLowerCase())) return false;
    }
    return true;
  }

  function draw(force) {
    const key = [lastId, filters.type, filters.node, filters.q].join('\u0000');
    if (!force && key === drawnKey) return;
    drawnKey = key;
    const types = [...new Set(events.map((e) => e.EventType))].sort();
    const nodes = [...new Set(events.map((e) => e.NodeName).filter(Boolean))]
      .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    options(typeSelect, types, 'All types', filters.type);
    options(nodeSelect, nodes.concat(['(cluster)']), 'All nodes', filters.node);
    const shown = [];
    let matching = 0;
    for (let i = events.length - 1; i >= 0; i--) {
      if (!matches(events[i])) continue;
      matching++;
      if (shown.length < MAX_ROWS) shown.push(events[i]);
    }
    count.textContent = (matching === events.length ? events.length + ' events'
                                                     : matching + ' of ' + events.length +
                                                       ' events match') +
      (matching > MAX_ROWS ? ' · the newest ' + MAX_ROWS + ' shown' : '');
    fill(tbody, shown.map((e) => h('tr', { 'data-event-id': e.EventId, 'data-type': e.EventType,
                                           'data-node': e.NodeName || '' },
      h('td', { class: 'time', title: e.EventTime }, when(e.EventTime)),
      h('td', { class: 'nowrap' }, h('span', { class: 'dot ' + eventTone(e.EventType) }),
        e.EventType),
      h('td', { class: 'nowrap' }, e.NodeName ? link(route('cluster', name, 'node', e.NodeName), e.NodeName)
                               : h('span', { class: 'muted' }, e.ResourceType),
        e.InstanceId ? h('div', { class: 'mono muted small' }, e.InstanceId) : null),
      h('td', { class: 'wrap' }, e.Description))));
    if (!shown.length) {
      tbody.append(h('tr', { class: 'empty' }, h('td', { colspan: 4 },
        events.length ? 'No event matches these filters.' : 'No events yet.')));
    }
  }

  async function refresh() {
    // The cluster must exist: a bad name reads as "not found", not as an empty log.
    if (!lastId) await call('DescribeCluster', { ClusterName: name });
    const fresh = await eventsAfter(name, lastId);
    if (fresh.length) {
      events = events.concat(fresh);
      if (events.length > MAX_KEPT) events = events.slice(-MAX_KEPT);
      lastId = fresh[fresh.length - 1].EventId;
    }
    draw(false);
  }

  return { title: 'Events · ' + name, crumbs: clusterCrumbs(name, ['Events', null]),
           tabs: clusterTabs(name, 'events'), el, refresh };
}
