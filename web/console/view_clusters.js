// #/clusters: every cluster endured holds.
import { call } from './api.js';
import { ago, badge, fill, h, link, route, section, table, when } from './dom.js';

export function clustersView() {
  const body = h('div');
  const el = h('div', { class: 'view', id: 'clusters-view' },
               h('div', { class: 'view-head' }, h('h1', null, 'Clusters')), body);
  let drawn = '';
  async function refresh() {
    const clusters = (await call('ListClusters')).ClusterSummaries || [];
    // Redrawn only on a change, so a link stays put under the pointer.
    const key = JSON.stringify(clusters);
    if (key === drawn) return;
    drawn = key;
    clusters.sort((a, b) => a.ClusterName.localeCompare(b.ClusterName));
    const rows = clusters.map((c) => h('tr', { 'data-cluster': c.ClusterName },
      h('td', null, link(route('cluster', c.ClusterName), c.ClusterName, { class: 'strong' })),
      h('td', null, badge(c.ClusterStatus)),
      h('td', null, when(c.CreationTime), h('span', { class: 'muted' }, ' · ',
                                               ago(c.CreationTime))),
      h('td', { class: 'mono wrap' }, c.ClusterArn),
      h('td', { class: 'links' },
        link(route('cluster', c.ClusterName), 'Nodes'), ' ',
        link(route('cluster', c.ClusterName, 'events'), 'Events'), ' ',
        link(route('cluster', c.ClusterName, 'jobs'), 'Jobs & training'))));
    const empty = h('span', null, 'No clusters yet. Create one with ',
                    h('code', null, 'endure create-cluster --cli-input-json file://cluster.json'),
                    '.');
    fill(body, section('Clusters (' + clusters.length + ')', null,
      table([{ label: 'Name' }, { label: 'Status' }, { label: 'Created' },
             { label: 'ARN' }, { label: '' }], rows, empty)));
  }
  return { title: 'Clusters', crumbs: [['Clusters', null]], el, refresh };
}
