// #/cluster/<name>/training/<job>: a training run's loss and tokens/s by step, its resumes
// (dashed lines), checkpoints (ticks on the axis) and evaluations.
import { AuthError, call, isUnknownOperation } from './api.js';
import { age, badge, dash, fill, h, num, percent, section, table, when } from './dom.js';
import { lineChart } from './chart.js';
import { clusterCrumbs, clusterTabs } from './ui.js';

export function trainingView(cluster, job) {
  const cards = h('div', { class: 'cards' });
  const lossBox = h('div', { class: 'chart-box', id: 'loss-chart' });
  const rateBox = h('div', { class: 'chart-box', id: 'rate-chart' });
  const starts = h('div');
  const checkpoints = h('div');
  const legend = (items) => h('span', { class: 'legend head-extra' },
    items.map(([cls, text]) => h('span', null, h('i', { class: 'swatch ' + cls }), text)));
  const el = h('div', { class: 'view', id: 'training-view' },
    h('div', { class: 'view-head' }, h('h1', null, 'Training job ' + job)), cards,
    h('div', { class: 'two-col' },
      section('Loss', legend([['loss', 'training'], ['eval', 'validation'],
                              ['resume', 'resume']]), lossBox),
      section('Tokens per second', legend([['rate', 'tokens/s'], ['resume', 'resume']]),
              rateBox)),
    h('div', { class: 'two-col' }, starts, checkpoints));
  let drawnKey = '';
  // Slurm's job ids are numbers; the address holds text.
  const jobId = /^[0-9]+$/.test(job) ? Number(job) : job;

  async function refresh() {
    let m;
    try {
      m = await call('GetTrainingMetrics', { ClusterName: cluster, JobId: jobId });
    } catch (e) {
      if (e instanceof AuthError || !isUnknownOperation(e)) throw e;
      fill(cards, h('p', { class: 'muted wide' },
                    'No training runs: this endured does not report training metrics.'));
      return;
    }
    const points = m.Points || [];
    const evals = m.Evals || [];
    const ckpts = m.Checkpoints || [];
    const startList = m.Starts || [];
    const key = [points.length, evals.length, ckpts.length, startList.length].join('/');
    if (key === drawnKey) return;
    drawnKey = key;
    const last = points[points.length - 1] || {};
    const resumes = startList.filter((s) => s.Resume > 0 || s.ResumedFrom > 0);
    const card = (label, value, sub) => h('div', { class: 'card' },
      h('div', { class: 'card-label' }, label), h('div', { class: 'card-value' }, value),
      sub ? h('div', { class: 'card-sub' }, sub) : null);
    const lastEval = evals[evals.length - 1];
    fill(cards,
      card('Step', num(last.Step), last.Time ? 'reported ' + when(last.Time) : null),
      card('Loss', num(last.Loss), lastEval ? 'validation ' + num(lastEval.ValLoss) : null),
      card('Tokens/s', num(last.TokensPerSecond)),
      card('MFU', percent(last.Mfu)),
      card('Resumes', String(resumes.length),
           resumes.length ? 'last: ' + dash(resumes[resumes.length - 1].Reason) : 'none'),
      card('Checkpoints', String(ckpts.length),
           ckpts.length ? 'last at step ' + ckpts[ckpts.length - 1].Step : null));
    const markers = resumes.map((s) => ({ x: s.ResumedFrom, label: 'resume ' + s.Resume }))
      .filter((mk) => isFinite(mk.x));
    const ckptSteps = ckpts.map((c) => c.Step);
    fill(lossBox, lineChart(
      [{ name: 'loss', cls: 'loss', points: points.map((p) => [p.Step, p.Loss]) },
       { name: 'validation loss', cls: 'eval', dots: true,
         points: evals.map((e) => [e.Step, e.ValLoss]) }],
      markers, ckptSteps, { xLabel: 'step', yLabel: 'loss' }));
    fill(rateBox, lineChart(
      [{ name: 'tokens/s', cls: 'rate', points: points.map((p) => [p.Step, p.TokensPerSecond]) }],
      markers, ckptSteps, { xLabel: 'step', yLabel: 'tokens/s', zero: true }));
    fill(starts, section('Starts and resumes', null, table(
      [{ label: 'Time' }, { label: 'Resume', cls: 'num' }, { label: 'From step', cls: 'num' },
       { label: 'Reason' }],
      startList.slice().reverse().map((s) => h('tr', null, h('td', null, when(s.Time)),
        h('td', { class: 'num' }, num(s.Resume)), h('td', { class: 'num' }, num(s.ResumedFrom)),
        h('td', { class: 'wrap' }, s.Resume ? dash(s.Reason) : badge('Started')))),
      'No start reported yet.')));
    fill(checkpoints, section('Checkpoints (latest 20)', null, table(
      [{ label: 'Step', cls: 'num' }, { label: 'Time' }, { label: 'Training stalled', cls: 'num' }],
      ckpts.slice(-20).reverse().map((c) => h('tr', null, h('td', { class: 'num' }, num(c.Step)),
        h('td', null, when(c.Time)),
        h('td', { class: 'num' }, c.StallSeconds === undefined ? '—'
          : c.StallSeconds < 1 ? (c.StallSeconds * 1000).toFixed(0) + ' ms'
            : age(c.StallSeconds)))),
      'No checkpoint yet.')));
  }

  return { title: 'Job ' + job + ' · ' + cluster,
           crumbs: clusterCrumbs(cluster, ['Jobs & training', '#/cluster/' +
                                           encodeURIComponent(cluster) + '/jobs'],
                                 ['Job ' + job, null]),
           tabs: clusterTabs(cluster, 'jobs'), el, refresh };
}
