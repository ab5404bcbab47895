// #/cluster/<name>/jobs: the cluster's Slurm jobs endure watches, with their auto-resume
// history, and the training runs that report metrics. An endured without these actions
// reads as "none" rather than as an error.
import { AuthError, call, isUnknownOperation } from './api.js';
import { badge, dash, fill, h, link, num, percent, route, section, table, when } from './dom.js';
import { clusterCrumbs, clusterTabs } from './ui.js';

// The reply's list, or null when this endured does not know the action.
async function listOrNull(action, cluster, key) {
  try {
    return (await call(action, { ClusterName: cluster }))[key] || [];
  } catch (e) {
    if (e instanceof AuthError || !isUnknownOperation(e)) throw e;
    return null;
  }
}

function nodesText(nodes) {
  return Array.isArray(nodes) ? nodes.join(', ') : dash(nodes);
}

export function jobsView(name) {
  const runs = h('div');
  const jobs = h('div');
  const el = h('div', { class: 'view', id: 'jobs-view' },
               h('div', { class: 'view-head' }, h('h1', null, 'Jobs & training')), runs, jobs);

  let drawn = '';
  async function refresh() {
    const [runList, jobList] = await Promise.all([
      listOrNull('ListTrainingRuns', name, 'TrainingRuns'),
      listOrNull('ListClusterJobs', name, 'Jobs'),
    ]);
    // Redrawn only on a change, so a link stays put under the pointer.
    const key = JSON.stringify([runList, jobList]);
    if (key === drawn) return;
    drawn = key;
    const runRows = (runList || []).slice().reverse().map((r) => h('tr', { 'data-job': r.JobId },
      h('td', null, link(route('cluster', name, 'training', String(r.JobId)), String(r.JobId),
                         { class: 'strong' })),
      h('td', null, badge(r.Status)),
      h('td', { class: 'num' }, num(r.LastStep)),
      h('td', { class: 'num' }, num(r.Loss)),
      h('td', { class: 'num' }, num(r.TokensPerSecond)),
      h('td', { class: 'num' }, percent(r.Mfu)),
      h('td', { class: 'num' }, num(r.Resumes)),
      h('td', null, when(r.FirstTime)),
      h('td', null, when(r.LastTime))));
    fill(runs, section('Training runs', null,
      table([{ label: 'Job' }, { label: 'Status' }, { label: 'Step', cls: 'num' },
             { label: 'Loss', cls: 'num' }, { label: 'Tokens/s', cls: 'num' },
             { label: 'MFU', cls: 'num' }, { label: 'Resumes', cls: 'num' },
             { label: 'First report' }, { label: 'Last report' }], runRows,
            runList === null ? 'No training runs (this endured does not report training ' +
                               'metrics).'
                             : 'No training runs yet: endure-train reports its steps here.')));
    const jobRows = (jobList || []).slice().reverse().map((j) => h('tr', { 'data-job': j.JobId },
      h('td', { class: 'strong' }, String(j.JobId)),
      h('td', null, badge(j.State)),
      h('td', null, dash(j.Mode)),
      h('td', { class: 'num' }, num(j.Resumes)),
      h('td', { class: 'wrap' }, dash(j.Reason)),
      h('td', { class: 'wrap mono' }, nodesText(j.Nodes)),
      h('td', null, when(j.FaultTime)),
      h('td', null, when(j.ReadyTime)),
      h('td', { class: 'wrap' }, dash(j.Message))));
    fill(jobs, section('Jobs and their auto-resume history', null,
      table([{ label: 'Job' }, { label: 'State' }, { label: 'Mode' },
             { label: 'Resumes', cls: 'num' },
             { label: 'Reason' }, { label: 'Nodes' }, { label: 'Fault' }, { label: 'Ready' },
             { label: 'Message' }], jobRows,
            jobList === null ? 'No jobs (this endured does not list jobs).'
                             : 'No jobs yet: a job run with srun --auto-resume=1 shows here.')));
  }

  return { title: 'Jobs · ' + name, crumbs: clusterCrumbs(name, ['Jobs & training', null]),
           tabs: clusterTabs(name, 'jobs'), el, refresh };
}
