// Line charts drawn as SVG by hand (nothing fetched from outside): one x axis (the step),
// one y axis, a few series, and vertical markers (resumes) and ticks (checkpoints).
import { num, svg } from './dom.js';

const W = 600;
const H = 260;
const M = { left: 58, right: 14, top: 14, bottom: 34 };
// More points than this are thinned for drawing (every k-th kept, the last always).
const MAX_DRAWN = 1500;

// Round tick values covering [min, max] in about n steps.
function niceTicks(min, max, n) {
  if (!(max > min)) {
    const pad = Math.abs(min) > 0 ? Math.abs(min) * 0.1 : 1;
    min -= pad;
    max += pad;
  }
  const raw = (max - min) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const r = raw / mag;
  const step = (r >= 7.5 ? 10 : r >= 3.5 ? 5 : r >= 1.5 ? 2 : 1) * mag;
  const lo = Math.floor(min / step) * step;
  const hi = Math.ceil(max / step) * step;
  const ticks = [];
  for (let v = lo; v <= hi + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  return { lo, hi, ticks };
}

function thin(points) {
  if (points.length <= MAX_DRAWN) return points;
  const k = Math.ceil(points.length / MAX_DRAWN);
  const out = points.filter((_, i) => i % k === 0);
  if (out[out.length - 1] !== points[points.length - 1]) out.push(points[points.length - 1]);
  return out;
}

// series: [{name, cls, points: [[x, y]], dots}] (dots: draw each point as a circle);
// markers: [{x, label}] vertical dashed lines; ticks: [x] small marks on the x axis;
// opts: {xLabel, yLabel, zero (y from 0), format (y tick text)}.
export function lineChart(series, markers, ticks, opts) {
  const all = series.flatMap((s) => s.points).filter((p) => isFinite(p[0]) && isFinite(p[1]));
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img',
                            'aria-label': opts.yLabel + ' by ' + opts.xLabel });
  if (!all.length) {
    root.append(svg('text', { x: W / 2, y: H / 2, class: 'chart-empty',
                              'text-anchor': 'middle' }, 'No points yet'));
    return root;
  }
  const xs = all.map((p) => p[0]).concat(markers.map((m) => m.x), ticks);
  const ys = all.map((p) => p[1]);
  let yMin = Math.min(...ys);
  const yMax = Math.max(...ys);
  if (opts.zero) yMin = Math.min(0, yMin);
  const xt = niceTicks(Math.min(...xs), Math.max(...xs), 6);
  const yt = niceTicks(yMin, yMax, 5);
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const sx = (x) => M.left + ((x - xt.lo) / (xt.hi - xt.lo)) * pw;
  const sy = (y) => M.top + ph - ((y - yt.lo) / (yt.hi - yt.lo)) * ph;
  const fmt = opts.format || ((v) => num(v));

  for (const v of yt.ticks) {
    root.append(svg('line', { x1: M.left, x2: W - M.right, y1: sy(v), y2: sy(v), class: 'grid' }),
                svg('text', { x: M.left - 6, y: sy(v) + 4, 'text-anchor': 'end',
                              class: 'tick' }, fmt(v)));
  }
  for (const v of xt.ticks) {
    root.append(svg('line', { x1: sx(v), x2: sx(v), y1: M.top + ph, y2: M.top + ph + 4,
                              class: 'axis' }),
                svg('text', { x: sx(v), y: M.top + ph + 17, 'text-anchor': 'middle',
                              class: 'tick' }, num(v)));
  }
  root.append(svg('line', { x1: M.left, x2: W - M.right, y1: M.top + ph, y2: M.top + ph,
                            class: 'axis' }),
              svg('text', { x: M.left + pw / 2, y: H - 3, 'text-anchor': 'middle',
                            class: 'axis-label' }, opts.xLabel));
  for (const x of ticks) {
    root.append(svg('line', { x1: sx(x), x2: sx(x), y1: M.top + ph - 6, y2: M.top + ph,
                              class: 'ckpt-tick' }, svg('title', null, 'checkpoint at step ' + x)));
  }
  for (const m of markers) {
    root.append(svg('line', { x1: sx(m.x), x2: sx(m.x), y1: M.top, y2: M.top + ph,
                              class: 'marker' }, svg('title', null, m.label)),
                svg('text', { x: sx(m.x) + 3, y: M.top + 10, class: 'marker-label' }, m.label));
  }
  for (const s of series) {
    const pts = thin(s.points.filter((p) => isFinite(p[0]) && isFinite(p[1])));
    if (!pts.length) continue;
    if (s.dots) {
      for (const p of pts) {
        root.append(svg('circle', { cx: sx(p[0]), cy: sy(p[1]), r: 3, class: 'dot ' + s.cls },
                        svg('title', null, `${s.name} at step ${p[0]}: ${fmt(p[1])}`)));
      }
    } else {
      const d = pts.map((p, i) => (i ? 'L' : 'M') + sx(p[0]).toFixed(1) + ' ' +
                                  sy(p[1]).toFixed(1)).join(' ');
      root.append(svg('path', { d, class: 'line ' + s.cls }));
    }
  }
  // A readout of the nearest point of the first series under the pointer.
  const first = series[0].points;
  const readout = svg('text', { x: W - M.right, y: M.top + 10, 'text-anchor': 'end',
                                class: 'readout' });
  const cursor = svg('circle', { r: 4, class: 'cursor', visibility: 'hidden' });
  root.append(cursor, readout);
  root.addEventListener('mousemove', (ev) => {
    if (!first.length) return;
    const box = root.getBoundingClientRect();
    const x = xt.lo + ((ev.clientX - box.left) * (W / box.width) - M.left) / pw * (xt.hi - xt.lo);
    let best = first[0];
    for (const p of first) if (Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p;
    cursor.setAttribute('cx', sx(best[0]));
    cursor.setAttribute('cy', sy(best[1]));
    cursor.setAttribute('visibility', 'visible');
    readout.textContent = `step ${best[0]}: ${fmt(best[1])}`;
  });
  root.addEventListener('mouseleave', () => {
    cursor.setAttribute('visibility', 'hidden');
    readout.textContent = '';
  });
  return root;
}
