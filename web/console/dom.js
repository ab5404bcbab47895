// Small DOM helpers. Every value goes into the page as text (textContent), never as HTML,
// so nothing endured reports (a node's log, an event's description) can inject markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k === 'className' ? 'class' : k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// Replaces el's children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// A status word as a coloured badge: green settled, blue in progress, red failed.
const GOOD = new Set(['Running', 'InService', 'Healthy', 'Succeeded', 'Completed', 'COMPLETED',
                      'RUNNING', 'Resumed', 'Done', 'Finished', 'Ready']);
const BAD = new Set(['Failure', 'Failed', 'Unhealthy', 'FAILED', 'NODE_FAIL', 'TIMEOUT',
                     'GaveUp', 'Crashed']);
const WARN = new Set(['ShuttingDown', 'Deleting', 'Terminated', 'CANCELLED', 'Draining',
                      'Stalled', 'Stopped']);
// Not known yet (a node before its first verdict) or at rest: grey.
const NEUTRAL = new Set(['Unknown', 'Idle']);

export function tone(word) {
  if (!word) return 'neutral';
  if (GOOD.has(word)) return 'ok';
  if (BAD.has(word)) return 'bad';
  if (WARN.has(word)) return 'warn';
  if (NEUTRAL.has(word)) return 'neutral';
  return 'busy';
}

export function badge(word, title) {
  return h('span', { class: 'badge ' + tone(word), title }, word || '—');
}

// The tone of an event type, for the timeline's dot.
export function eventTone(type) {
  const t = type || '';
  if (/Fail|Unhealthy|Fault|Lost|Error|Crash|Hang|GaveUp/i.test(t)) return 'bad';
  if (/Replac|Reboot|Drain|Shutting|Delet|Terminat|Resum/i.test(t)) return 'warn';
  if (/Healthy|Running|Succeeded|Returned|InService|Created|Ready|Passed/i.test(t)) return 'ok';
  return 'busy';
}

export function dash(v) {
  return v === undefined || v === null || v === '' ? '—' : v;
}

// Seconds as a short age: "4 s", "3 min", "2 h 5 min".
export function age(seconds) {
  if (seconds === undefined || seconds === null || !isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 90) return s + ' s';
  const m = Math.round(s / 60);
  if (m < 90) return m + ' min';
  const hours = Math.floor(m / 60);
  if (hours < 48) return hours + ' h ' + (m % 60) + ' min';
  return Math.floor(hours / 24) + ' d ' + (hours % 24) + ' h';
}

function parseTime(t) {
  if (t === undefined || t === null || t === '') return null;
  const d = typeof t === 'number' ? new Date(t * (t < 1e12 ? 1000 : 1)) : new Date(t);
  return isNaN(d.getTime()) ? null : d;
}

const pad = (n) => String(n).padStart(2, '0');

// A time as the local clock shows it; the date too when it is not today.
export function when(t) {
  const d = parseTime(t);
  if (!d) return dash(t);
  const clock = pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  const today = new Date();
  if (d.toDateString() === today.toDateString()) return clock;
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + clock;
}

export function ago(t) {
  const d = parseTime(t);
  if (!d) return '—';
  return age((Date.now() - d.getTime()) / 1000) + ' ago';
}

// A number with a few significant digits and a k/M suffix for large ones.
export function num(v, digits = 4) {
  if (v === undefined || v === null || v === '' || !isFinite(v)) return '—';
  const a = Math.abs(v);
  if (a >= 1e6) return Number((v / 1e6).toPrecision(3)) + ' M';
  if (a >= 1e4) return Number((v / 1e3).toPrecision(3)) + ' k';
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(digits)));
}

export function percent(v) {
  if (v === undefined || v === null || !isFinite(v)) return '—';
  // MFU comes as a fraction (0.41) or as a percentage (41): both read as 41 %.
  const p = v <= 1 ? v * 100 : v;
  return p.toFixed(1) + ' %';
}

// A table: columns [{label, cls}], and rows already built (tr elements).
export function table(columns, rows, emptyText) {
  const body = h('tbody', null, rows);
  if (!rows.length && emptyText) {
    body.append(h('tr', { class: 'empty' }, h('td', { colspan: columns.length }, emptyText)));
  }
  return h('table', { class: 'grid' },
           h('thead', null, h('tr', null, columns.map((c) => h('th', { class: c.cls }, c.label)))),
           body);
}

export function section(title, extra, ...content) {
  return h('section', { class: 'panel' },
           h('div', { class: 'panel-head' }, h('h2', null, title), extra), content);
}

export function link(href, text, attrs) {
  return h('a', Object.assign({ href }, attrs || {}), text);
}

// A route's href, with every part encoded.
export function route(...parts) {
  return '#/' + parts.map((p) => encodeURIComponent(p)).join('/');
}
