// The console's shell: login, hash routing (#/cluster/demo, ...), and a poll every two
// seconds that refreshes the view on screen. Views are in view_*.js; each returns
// {crumbs, tabs, el, refresh} and draws itself into el on every refresh.
import { AuthError, call, clearToken, setToken, token } from './api.js';
import { fill, h } from './dom.js';
import { flash, onRefreshSoon } from './ui.js';
import { clustersView } from './view_clusters.js';
import { clusterView } from './view_cluster.js';
import { eventsView } from './view_events.js';
import { nodeView } from './view_node.js';
import { jobsView } from './view_jobs.js';
import { trainingView } from './view_training.js';

const POLL_MS = 2000;
const main = document.getElementById('view');
const crumbs = document.getElementById('crumbs');
const live = document.getElementById('live');
const logout = document.getElementById('logout');

let current = null;  // the view on screen
let generation = 0;  // bumped on every navigation, so a late refresh of an old view is dropped
let timer = null;
let loginMessage = { text: '', kind: '' };  // shown on the login form

function refreshSoon() {
  if (current) schedule(generation, 300);
}
onRefreshSoon(refreshSoon);

// Back to the login form, with a message saying why.
function toLogin(text, kind = 'error') {
  clearToken();
  loginMessage = { text, kind };
  if (location.hash !== '#/login') {
    sessionStorage.setItem('endure.after-login', location.hash);
    location.hash = '#/login';
  } else {
    render();
  }
}

const ROUTES = [
  [/^\/?$/, () => clustersView()],
  [/^\/clusters$/, () => clustersView()],
  [/^\/cluster\/([^/]+)$/, (m) => clusterView(m[1])],
  [/^\/cluster\/([^/]+)\/events$/, (m, q) => eventsView(m[1], q)],
  [/^\/cluster\/([^/]+)\/node\/([^/]+)$/, (m) => nodeView(m[1], m[2])],
  [/^\/cluster\/([^/]+)\/jobs$/, (m) => jobsView(m[1])],
  [/^\/cluster\/([^/]+)\/training\/([^/]+)$/, (m) => trainingView(m[1], m[2])],
];

function parseHash() {
  const raw = location.hash.replace(/^#/, '');
  const [path, query] = raw.split('?');
  return { path: path || '/', query: new URLSearchParams(query || '') };
}

function render() {
  generation++;
  clearTimeout(timer);
  current = null;
  const { path, query } = parseHash();
  if (path === '/login' || !token()) {
    showLogin();
    return;
  }
  logout.hidden = false;
  let view = null;
  for (const [re, make] of ROUTES) {
    const m = path.match(re);
    if (m) {
      view = make(m.slice(0).map((p, i) => (i ? decodeURIComponent(p) : p)), query);
      break;
    }
  }
  if (!view) {
    fill(crumbs, h('a', { href: '#/clusters' }, 'Clusters'));
    fill(main, h('div', { class: 'panel' }, h('h1', null, 'No such page'),
                 h('p', null, 'Nothing lives at ', h('code', null, '#' + path), '. ',
                   h('a', { href: '#/clusters' }, 'Go to the clusters'), '.')));
    live.textContent = '';
    return;
  }
  current = view;
  view.el.classList.add('loading');
  document.title = view.title + ' · endure';
  fill(crumbs, view.crumbs.map(([text, href], i) => [
    i ? h('span', { class: 'sep', 'aria-hidden': 'true' }, '›') : null,
    href ? h('a', { href }, text) : h('span', { class: 'here' }, text),
  ]));
  const parts = [];
  if (view.tabs) parts.push(view.tabs);
  parts.push(view.el);
  fill(main, parts);
  tick(generation);
}

function schedule(gen, ms) {
  clearTimeout(timer);
  timer = setTimeout(() => tick(gen), ms);
}

async function tick(gen) {
  const view = current;
  try {
    await view.refresh();
    if (gen !== generation) return;
    view.el.querySelectorAll(':scope > .error.load').forEach((e) => e.remove());
    view.el.classList.remove('loading');
    live.className = 'live ok';
    live.textContent = 'Live · updated ' + new Date().toLocaleTimeString([], { hour12: false });
  } catch (e) {
    if (gen !== generation) return;
    if (e instanceof AuthError) {
      toLogin('endured refused the token (' + e.message + '): log in again.');
      return;
    }
    live.className = 'live bad';
    live.textContent = e.code === 'Unreachable' ? 'endured does not answer; retrying'
                                                : 'Refresh failed; retrying';
    let box = view.el.querySelector(':scope > .error.load');
    if (!box) {
      box = h('div', { class: 'error load' });
      view.el.prepend(box);
    }
    fill(box, h('strong', null, e.code || 'Error'), ': ', e.message);
  }
  if (gen === generation) schedule(gen, POLL_MS);
}

function showLogin() {
  logout.hidden = true;
  live.textContent = '';
  fill(crumbs, h('span', { class: 'here' }, 'Log in'));
  document.title = 'Log in · endure';
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off',
                             spellcheck: 'false', required: true,
                             placeholder: 'operator token' });
  const message = h('p', { id: 'login-message', class: loginMessage.kind },
                    loginMessage.text);
  const button = h('button', { type: 'submit', id: 'login-button', class: 'primary' }, 'Log in');
  const form = h('form', { class: 'login', id: 'login-form' },
    h('h1', null, 'endure console'),
    h('p', { class: 'muted' }, 'Log in with the operator token of this endured. It is in ',
      h('code', null, '$ENDURE_HOME/token'), ' (by default ', h('code', null, '~/.endure/token'),
      ') on the machine endured runs on.'),
    h('label', { for: 'token' }, 'Operator token'), input, message, button);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const candidate = input.value.trim();
    button.disabled = true;
    message.className = 'muted';
    message.textContent = 'Checking…';
    try {
      // The token is kept only once endured has accepted it.
      await call('ListClusters', {}, candidate);
      setToken(candidate);
      loginMessage = { text: '', kind: '' };
      // Back where the user was sent from, or stays on the page they opened.
      let next = sessionStorage.getItem('endure.after-login') || location.hash;
      sessionStorage.removeItem('endure.after-login');
      if (!next || next === '#/login') next = '#/clusters';
      if (next === location.hash) render();
      else location.hash = next;
    } catch (e) {
      input.value = '';
      message.className = 'error';
      message.textContent = e instanceof AuthError
        ? 'endured refused that token. Check it and try again.'
        : 'Could not log in: ' + e.message;
      button.disabled = false;
      input.focus();
    }
  });
  fill(main, form);
  input.focus();
}

logout.addEventListener('click', () => toLogin('Logged out.', 'muted'));

// A script error anywhere shows on the page (and the browser test looks for it).
window.consoleErrors = [];
function reportError(text) {
  window.consoleErrors.push(text);
  flash('Console error: ' + text, 'bad');
}
window.addEventListener('error', (e) => reportError(e.message));
window.addEventListener('unhandledrejection', (e) => {
  if (e.reason instanceof AuthError) return toLogin('endured refused the token: log in again.');
  reportError(String(e.reason && e.reason.message || e.reason));
});

window.addEventListener('hashchange', render);
if (!location.hash) location.replace('#/clusters');
render();
