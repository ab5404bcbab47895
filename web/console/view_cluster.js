// #/cluster/<name>: the cluster, its instance groups, its nodes (status, health, last
// verdict, heartbeat age, recovery under way) with their actions, and its latest events.
import { AuthError, call, eventsAfter } from './api.js';
import { age, ago, badge, dash, eventTone, fill, h, link, route, section, table, when }
  from './dom.js';
import { clusterCrumbs, clusterTabs, confirmAction, flash, nodeButtons, setButtonsState,
         syncRows } from './ui.js';

// A heartbeat older than this reads as late (agents beat every few seconds).
const LATE_HEARTBEAT_S = 15;

const ROLE_ORDER = { controller: 0, login: 1, worker: 2 };

export function clusterView(name) {
  const summary = h('div', { class: 'cards' });
  const groups = h('div');
  const nodeBody = h('tbody');
  const nodeCount = h('span', { class: 'muted' });
  const events = h('div');
  const deepAll = h('button', { type: 'button', class: 'quiet', id: 'deep-check-all',
                                onclick: () => deepCheckAll(name) }, 'Deep check all workers');
  const nodesPanel = section('Nodes', h('span', { class: 'head-extra' }, nodeCount, deepAll),
    h('table', { class: 'grid nodes', id: 'nodes' },
      h('thead', null, h('tr', null,
        ['Node', 'Instance', 'Group', 'Status', 'Health', 'Last verdict', 'Heartbeat',
         'Recovery', 'Actions'].map((c) => h('th', null, c)))),
      nodeBody));
  const title = h('h1', null, name);
  const statusBadge = h('span');
  const el = h('div', { class: 'view', id: 'cluster-view' },
               h('div', { class: 'view-head' }, title, statusBadge), summary,
               nodesPanel, groups, events);
  let lastEventId = 0;
  let recent = [];
  let drawnGroups = '';
  let drawnEvents = -1;

  async function refresh() {
    const [cluster, listing] = await Promise.all([
      call('DescribeCluster', { ClusterName: name }),
      call('ListClusterNodes', { ClusterName: name }),
    ]);
    const nodes = listing.ClusterNodeSummaries || [];
    // ListClusterNodes has no health: each node's details carry it.
    const details = await Promise.all(nodes.map((n) =>
      call('DescribeClusterNode', { ClusterName: name, NodeId: n.InstanceId })
        .then((r) => r.NodeDetails)
        .catch((e) => {
          if (e instanceof AuthError) throw e;
          return Object.assign({}, n, { Health: 'Unknown', error: e.message });
        })));
    const fresh = await eventsAfter(name, lastEventId);
    if (fresh.length) {
      lastEventId = fresh[fresh.length - 1].EventId;
      recent = recent.concat(fresh).slice(-10);
    }
    drawSummary(cluster, details);
    drawNodes(details);
    drawGroups(cluster);
    drawEvents();
  }

  function drawSummary(c, details) {
    fill(statusBadge, badge(c.ClusterStatus));
    const running = details.filter((d) => d.InstanceStatus.Status === 'Running').length;
    const unhealthy = details.filter((d) => d.Health === 'Unhealthy').length;
    const recovering = details.filter((d) => d.Recovery).length;
    const tier = c.TieredStorageConfig;  // absent: never set, the tier is off
    const card = (label, value, sub) =>
      h('div', { class: 'card' }, h('div', { class: 'card-label' }, label),
        h('div', { class: 'card-value' }, value), sub ? h('div', { class: 'card-sub' }, sub) : null);
    fill(summary,
      card('Status', badge(c.ClusterStatus), c.FailureMessage || null),
      card('Nodes running', running + ' / ' + details.length,
           (unhealthy ? unhealthy + ' unhealthy' : 'none unhealthy') +
           (recovering ? ' · ' + recovering + ' recovering' : '')),
      card('Node recovery', dash(c.NodeRecovery)),
      card('Tiered storage', dash(tier && tier.Mode),
           tier && tier.Mode === 'Enable'
             ? tier.InstanceMemoryAllocationPercentage + ' % of each node\'s memory' : null),
      card('Slurm controller', dash(c.SlurmControllerNode),
           c.SlurmctldPort ? 'slurmctld port ' + c.SlurmctldPort : null),
      card('Created', when(c.CreationTime), ago(c.CreationTime)),
      card('Shared folder', h('span', { class: 'mono wrap' }, dash(c.SharedFolder))));
    if (c.FailureMessage) {
      summary.append(h('div', { class: 'error wide' }, 'Cluster failed: ' + c.FailureMessage));
    }
  }

  function drawNodes(details) {
    details.sort((a, b) =>
      (ROLE_ORDER[a.Role] ?? 3) - (ROLE_ORDER[b.Role] ?? 3) ||
      a.InstanceGroupName.localeCompare(b.InstanceGroupName) ||
      a.NodeName.localeCompare(b.NodeName, undefined, { numeric: true }) ||
      a.InstanceId.localeCompare(b.InstanceId));
    nodeCount.textContent = details.length + (details.length === 1 ? ' node' : ' nodes');
    syncRows(nodeBody, details, (d) => d.InstanceId, (d) => {
      const cells = Array.from({ length: 8 }, () => h('td'));
      const actions = nodeButtons(name, d.NodeName);
      return h('tr', { 'data-node': d.NodeName }, cells, h('td', { class: 'actions-cell' },
                                                           actions));
    }, (row, d) => {
      const c = row.children;
      row.dataset.instance = d.InstanceId;
      row.dataset.status = d.InstanceStatus.Status;
      fill(c[0], link(route('cluster', name, 'node', d.NodeName), d.NodeName,
                      { class: 'strong' }));
      fill(c[1], h('span', { class: 'mono' }, d.InstanceId),
           d.NodeLogicalId ? h('div', { class: 'mono muted small logical-id',
                                        title: 'NodeLogicalId: kept through replacements' },
                               d.NodeLogicalId) : null);
      fill(c[2], h('span', { title: d.Role ? 'Role: ' + d.Role : null }, d.InstanceGroupName));
      fill(c[3], badge(d.InstanceStatus.Status, d.InstanceStatus.Message));
      c[3].className = 'status';
      fill(c[4], badge(d.Health));
      fill(c[5], h('span', { class: 'verdict' }, dash(d.LastVerdict)));
      c[5].className = 'verdict-cell';
      const hb = d.SecondsSinceHeartbeat;
      fill(c[6], hb === undefined ? h('span', { class: 'muted' }, 'none yet')
                                  : h('span', { class: hb > LATE_HEARTBEAT_S ? 'late' : '' },
                                      age(hb) + ' ago'));
      fill(c[7], d.Recovery ? h('span', { class: 'recovery', title: d.Recovery.Reason },
                                 d.Recovery.Action + ' · ' + d.Recovery.Stage)
                            : h('span', { class: 'muted' }, '—'));
      c[7].className = 'recovery-cell';
      setButtonsState(row.querySelector('.actions'), d);
    });
    if (!details.length) {
      nodeBody.append(h('tr', { class: 'empty' }, h('td', { colspan: 9 }, 'No nodes yet.')));
    }
  }

  function drawGroups(c) {
    const key = JSON.stringify(c.InstanceGroups);
    if (key === drawnGroups) return;
    drawnGroups = key;
    const rows = (c.InstanceGroups || []).map((g) => h('tr', null,
      h('td', { class: 'strong' }, g.InstanceGroupName),
      h('td', null, dash(g.Role)),
      h('td', null, g.InstanceType),
      h('td', { class: 'counts' }, g.CurrentCount + ' / ' + g.TargetCount,
        g.ActiveOperations && g.ActiveOperations.Scaling
          ? h('span', { class: 'muted scaling' }, ' (scaling)') : null),
      h('td', null, g.WarmSpares ? (g.CurrentWarmSpares || 0) + ' / ' + g.WarmSpares : '—'),
      h('td', null, dash(g.PartitionName)),
      h('td', null, g.HostPool ? 'hosts: ' + g.HostPool : 'local'),
      h('td', { class: 'mono wrap' }, g.LifeCycleConfig ? g.LifeCycleConfig.OnCreate : '—')));
    fill(groups, section('Instance groups', null,
      table([{ label: 'Group' }, { label: 'Role' }, { label: 'Type' },
             { label: 'Running / target' }, { label: 'Warm spares' }, { label: 'Partition' },
             { label: 'Provider' }, { label: 'On create' }], rows, 'No instance groups.')));
  }

  function drawEvents() {
    if (drawnEvents === lastEventId) return;
    drawnEvents = lastEventId;
    const rows = recent.slice().reverse().map((e) => h('tr', null,
      h('td', { class: 'time' }, when(e.EventTime)),
      h('td', { class: 'nowrap' }, h('span', { class: 'dot ' + eventTone(e.EventType) }),
        e.EventType),
      h('td', { class: 'nowrap' }, e.NodeName ? link(route('cluster', name, 'node', e.NodeName), e.NodeName)
                               : h('span', { class: 'muted' }, e.ResourceType)),
      h('td', { class: 'wrap' }, e.Description)));
    fill(events, section('Latest events',
      link(route('cluster', name, 'events'), 'All events →', { class: 'head-extra' }),
      table([{ label: 'Time', cls: 'time' }, { label: 'Type' }, { label: 'Node' },
             { label: 'Description' }], rows, 'No events yet.')));
  }

  return { title: name, crumbs: clusterCrumbs(name), tabs: clusterTabs(name, 'overview'), el,
           refresh };
}

async function deepCheckAll(cluster) {
  const ok = await confirmAction('Deep check all workers',
    `Start a deep health check on every worker of ${cluster}? Each is held out of Slurm ` +
    '(a maintenance reservation) while its tests run: jobs wait.', 'Start deep check');
  if (!ok) return;
  try {
    const r = await call('StartClusterHealthCheck', { ClusterName: cluster });
    flash(`Deep health check ${r.HealthCheckId} started on ${(r.Nodes || []).join(', ')}.`);
  } catch (e) {
    if (e instanceof AuthError) throw e;
    flash(`Deep check refused: ${e.code}: ${e.message}`, 'bad');
  }
}
