// endured's JSON API, called with the operator token the user logged in with. The token
// lives in sessionStorage: it is gone when the tab closes.
const TOKEN_KEY = 'endure.token';

export class AuthError extends Error {}

export class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

// POST /v1/<action> with body; resolves to the reply's JSON. Rejects with AuthError on a
// 401 (the token is wrong or gone) and ApiError otherwise.
export async function call(action, body = {}, tokenToUse = token()) {
  let res;
  try {
    res = await fetch('/v1/' + action, {
      method: 'POST',
      headers: { 'Authorization': 'Bearer ' + tokenToUse, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError('Unreachable', 'endured does not answer (' + e.message + ')', 0);
  }
  let data = null;
  try {
    data = await res.json();
  } catch (e) {
    data = null;
  }
  if (res.status === 401) throw new AuthError((data && data.message) || 'token refused');
  if (!res.ok) {
    throw new ApiError((data && data.__type) || 'HTTP' + res.status,
                       (data && data.message) || res.statusText, res.status);
  }
  return data || {};
}

// True for the reply of an endured that does not know the action (an older one).
export function isUnknownOperation(e) {
  return e instanceof ApiError && e.code === 'UnknownOperation';
}

// Every event of a cluster after afterId (0: from the start), oldest first, page by page.
export async function eventsAfter(cluster, afterId, nodeName) {
  const pageSize = 1000;
  const all = [];
  for (;;) {
    const req = { ClusterName: cluster, AfterEventId: afterId, MaxResults: pageSize };
    if (nodeName) req.NodeName = nodeName;
    const page = (await call('ListClusterEvents', req)).Events || [];
    all.push(...page);
    if (page.length < pageSize) return all;
    afterId = page[page.length - 1].EventId;
  }
}
