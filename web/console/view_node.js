// #/cluster/<name>/node/<node>: one node: its details, its lifecycle (the events of its
// states, newest first) and its lifecycle scripts' output, with its actions.
import { call, eventsAfter } from './api.js';
import { age, badge, dash, eventTone, fill, h, section, table, when } from './dom.js';
import { clusterCrumbs, clusterTabs, nodeButtons, setButtonsState } from './ui.js';

export function nodeView(cluster, node) {
  const head = h('div', { class: 'view-head' }, h('h1', null, node));
  const badges = h('span', { class: 'badges' });
  const actions = nodeButtons(cluster, node);
  head.append(badges, h('span', { class: 'head-actions' }, actions));
  const facts = h('dl', { class: 'facts' });
  const lifecycle = h('div');
  const log = h('pre', { class: 'log', id: 'node-log', tabindex: '0' });
  const logInfo = h('span', { class: 'muted small' });
  const el = h('div', { class: 'view', id: 'node-view' }, head,
    h('div', { class: 'two-col' },
      section('Details', null, facts),
      h('div', { class: 'col' }, lifecycle)),
    section('Lifecycle script output', logInfo, log));
  let events = [];
  let lastId = 0;

  async function refresh() {
    const [reply, logReply, fresh] = await Promise.all([
      call('DescribeClusterNode', { ClusterName: cluster, NodeId: node }),
      call('GetClusterNodeLog', { ClusterName: cluster, NodeId: node }),
      eventsAfter(cluster, lastId, node),
    ]);
    if (fresh.length) {
      events = events.concat(fresh);
      lastId = fresh[fresh.length - 1].EventId;
    }
    const d = reply.NodeDetails;
    fill(badges, badge(d.InstanceStatus.Status, d.InstanceStatus.Message), ' ', badge(d.Health));
    setButtonsState(actions, d);
    drawFacts(d);
    drawLifecycle(d);
    drawLog(logReply);
  }

  function drawFacts(d) {
    const lc = d.LifeCycle || {};
    const rows = [
      ['Instance', h('span', { class: 'mono' }, d.InstanceId)],
      ['Logical id', d.NodeLogicalId ? h('span', { class: 'mono logical-id' }, d.NodeLogicalId)
                                     : h('span', { class: 'muted' }, 'none')],
      ['Group', d.InstanceGroupName + (d.Role && d.Role !== d.InstanceGroupName
        ? ' (' + d.Role + ')' : '')],
      ['Type', d.InstanceType],
      ['Status', [badge(d.InstanceStatus.Status), d.InstanceStatus.Message
        ? h('div', { class: 'muted small' }, d.InstanceStatus.Message) : null]],
      ['Health', badge(d.Health)],
      ['Last verdict', h('span', { class: 'verdict' }, dash(d.LastVerdict))],
      ['Heartbeat', d.SecondsSinceHeartbeat === undefined ? 'none yet'
        : age(d.SecondsSinceHeartbeat) + ' ago'],
      ['Recovery', d.Recovery ? d.Recovery.Action + ' · ' + d.Recovery.Stage + ' — ' +
        d.Recovery.Reason : 'none under way'],
      ['Lifecycle scripts', lc.Status + (lc.ExitCode !== undefined ? ' (exit ' + lc.ExitCode +
        ')' : '')],
      ['Launched', when(d.LaunchTime)],
      ['Address', d.PrivatePrimaryIp ? d.PrivatePrimaryIp + (d.SlurmdPort ? ':' + d.SlurmdPort
        : '') : '—'],
      ['Host name', dash(d.PrivateDnsHostname)],
      ['Replaces', d.Replaces ? h('span', { class: 'mono' }, d.Replaces) : '—'],
    ];
    if (d.TerminationTime) rows.push(['Terminated', when(d.TerminationTime)]);
    fill(facts, rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
  }

  function drawLifecycle() {
    const rows = events.slice(-200).reverse().map((e) => h('tr', null,
      h('td', { class: 'time', title: e.EventTime }, when(e.EventTime)),
      h('td', null, h('span', { class: 'dot ' + eventTone(e.EventType) }), e.EventType,
        h('div', { class: 'wrap small muted' }, e.Description))));
    fill(lifecycle, section('Lifecycle', h('span', { class: 'muted small head-extra' },
                                          events.length + ' events'),
      h('div', { class: 'scroll-y' }, table([{ label: 'Time', cls: 'time' }, { label: 'Event' }],
                                            rows, 'No events for this node yet.'))));
  }

  function drawLog(r) {
    logInfo.textContent = r.LogPath ? r.LogPath : '';
    logInfo.className = 'muted small mono head-extra';
    const text = r.Log || '(no output yet)';
    if (log.textContent === text) return;
    // Follows the end of the log unless the reader scrolled up.
    const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.textContent = text;
    if (atEnd) log.scrollTop = log.scrollHeight;
  }

  return { title: node + ' · ' + cluster, crumbs: clusterCrumbs(cluster, [node, null]),
           tabs: clusterTabs(cluster, 'overview'), el, refresh };
}
