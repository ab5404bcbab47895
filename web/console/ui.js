// What views share besides the DOM helpers: the flash message, the confirmation dialog,
// and the node actions (reboot, replace, deep health check) behind it.
import { AuthError, call } from './api.js';
import { fill, h, route } from './dom.js';

const flashBox = document.getElementById('flash');
let refreshHook = () => {};

// The shell's way to refresh the view on screen now rather than at the next poll.
export function onRefreshSoon(fn) {
  refreshHook = fn;
}

// Shows a short message above the view: what an action did, or why it failed.
export function flash(text, kind = 'ok') {
  fill(flashBox, h('span', null, text),
       h('button', { type: 'button', class: 'quiet', 'aria-label': 'Dismiss',
                     onclick: () => { flashBox.hidden = true; } }, '×'));
  flashBox.className = 'flash ' + kind;
  flashBox.hidden = false;
  clearTimeout(flashBox.timer);
  flashBox.timer = setTimeout(() => { flashBox.hidden = true; }, kind === 'ok' ? 8000 : 20000);
}

// Asks before an action; resolves to true when the user confirms.
export function confirmAction(title, text, actionLabel) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = actionLabel;
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.returnValue = 'cancel';
    dialog.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

const ACTIONS = {
  reboot: {
    label: 'Reboot',
    api: 'BatchRebootClusterNodes',
    text: (node) => `Reboot ${node}? It leaves Slurm, restarts, runs its boot scripts and ` +
      'returns to service; jobs running on it are interrupted.',
  },
  replace: {
    label: 'Replace',
    api: 'BatchReplaceClusterNodes',
    text: (node) => `Replace ${node}? Its instance is terminated and a new one takes the ` +
      'same Slurm name; jobs running on it are interrupted and its local disk is lost.',
  },
  deep: {
    label: 'Deep check',
    api: 'StartClusterHealthCheck',
    text: (node) => `Start a deep health check on ${node}? It is held out of Slurm (a ` +
      'maintenance reservation) while the CPU, memory, disk and network tests run.',
  },
};

// Runs a node action after a confirmation, and says in the flash what endured answered.
// The batch actions take instance ids: the instance is the one the user saw.
export async function nodeAction(kind, cluster, node, instanceId) {
  const a = ACTIONS[kind];
  if (!await confirmAction(`${a.label} ${node}`, a.text(node), a.label)) return;
  try {
    const reply = await call(a.api, { ClusterName: cluster, NodeIds: [instanceId || node] });
    const failed = reply.Failed || [];
    if (failed.length) {
      flash(`${a.label} ${node} refused: ${failed[0].Code}: ${failed[0].Message}`, 'bad');
    } else if (kind === 'deep') {
      flash(`Deep health check ${reply.HealthCheckId || ''} started on ${node}.`);
    } else {
      flash(`${a.label} of ${node} started.`);
    }
  } catch (e) {
    flash(`${a.label} ${node} failed: ${e.code || 'Error'}: ${e.message}`, 'bad');
    if (e instanceof AuthError) throw e;  // the shell sends the user back to log in
  }
  refreshHook();
}

// The three action buttons of a node; setButtonsState keeps them in step with the node.
export function nodeButtons(cluster, node) {
  const buttons = ['reboot', 'replace', 'deep'].map((kind) =>
    h('button', { type: 'button', class: 'small ' + (kind === 'deep' ? 'quiet' : 'warn'),
                  'data-action': kind, 'data-node': node, disabled: true,
                  onclick: (ev) => {
                    ev.stopPropagation();
                    nodeAction(kind, cluster, node, ev.currentTarget.dataset.instance);
                  } },
      ACTIONS[kind].label));
  return h('span', { class: 'actions' }, buttons);
}

// Enables a node's buttons only when endured would take the action: a node mid-recovery or
// mid-check is left alone, and the Slurm controller node is rebooted, never replaced.
export function setButtonsState(actions, details) {
  const status = details.InstanceStatus && details.InstanceStatus.Status;
  const busy = !!details.Recovery || status !== 'Running';
  const why = `${details.NodeName} is ${status}` +
    (details.Recovery ? ` (${details.Recovery.Action} under way)` : '');
  for (const b of actions.querySelectorAll('button')) {
    b.dataset.instance = details.InstanceId;
    const controller = b.dataset.action === 'replace' && details.Role === 'controller';
    b.disabled = busy || controller;
    b.title = controller ? 'The Slurm controller node holds Slurm\'s state: reboot it instead'
                         : busy ? why : '';
  }
}

// The tabs under a cluster's name; active is 'overview', 'events' or 'jobs'.
export function clusterTabs(cluster, active) {
  const tab = (key, text, href) =>
    h('a', { href, class: 'tab' + (key === active ? ' active' : ''),
             'aria-current': key === active ? 'page' : null }, text);
  return h('nav', { class: 'tabs', 'aria-label': 'Cluster pages' },
           tab('overview', 'Overview', route('cluster', cluster)),
           tab('events', 'Events', route('cluster', cluster, 'events')),
           tab('jobs', 'Jobs & training', route('cluster', cluster, 'jobs')));
}

export function clusterCrumbs(cluster, ...more) {
  return [['Clusters', '#/clusters'], [cluster, more.length ? route('cluster', cluster) : null],
          ...more];
}

// Keeps one row per key in tbody across refreshes: a row (and the button in it a user is
// about to click) survives a refresh, and only its cells' contents change.
export function syncRows(tbody, items, keyOf, make, update) {
  const old = new Map([...tbody.children].filter((r) => r.dataset.key)
                        .map((r) => [r.dataset.key, r]));
  for (const r of [...tbody.children]) if (!r.dataset.key) r.remove();
  let prev = null;
  for (const item of items) {
    const key = keyOf(item);
    let row = old.get(key);
    old.delete(key);
    if (!row) {
      row = make(item);
      row.dataset.key = key;
    }
    update(row, item);
    const want = prev ? prev.nextSibling : tbody.firstChild;
    if (want !== row) tbody.insertBefore(row, want);
    prev = row;
  }
  for (const r of old.values()) r.remove();
}
