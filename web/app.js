// Lineup waiting room: join an event's queue, wait for your number to be called (reading the
// public status the CDN serves; a pre-queue number from the published draw), hold the best seats
// available in a section or choose seats in it, pay (through the local simulated payment
// provider) and see the issued ticket.
//
// The HTTP contract is openapi.yaml. This page is served by `lineup dev`, so the API is on the
// same origin. Identity is an UNSIGNED JWT made here from the "Your name" field: the local
// server takes its `sub` without checking a signature (development only); in AWS the API
// Gateway JWT authorizer verifies a real token.

const MAX_SEATS = 4;
const SEAT_REFRESH_MS = 5000;
const ROWS_PER_PAGE = 25; // one section's seats are shown this many rows at a time
const DEFAULT_PARTY_SIZE = 2; // seats wanted, until the customer says otherwise
const ORDER_POLL_MS = 1000;
const TICKET_POLL_MS = 1000;
const DEFAULT_POLL_S = 5; // also the status read interval at the front of the queue
const MAX_STATUS_READ_S = 300; // far back, the status is read at most this far apart
const CHUNK_FETCH_SPREAD_S = 10; // a pre-queue entrant fetches its draw chunk within this
const JUST_TAKEN_MS = 15000; // the seat map may lag: keep seats we were told are taken marked
const CUSTOMER_RE = /^[!-~]{1,128}$/; // the API's rule for `sub`: 1-128 visible ASCII

const $ = (id) => document.getElementById(id);
const el = {
  eventName: $('event-name'), eventMeta: $('event-meta'), message: $('message'),
  customer: $('customer'), customerHint: $('customer-hint'),
  queueHeading: $('queue-heading'), status: $('status'), statusText: $('status-text'),
  position: $('position'), eta: $('eta'), progressWrap: $('progress-wrap'), progress: $('progress'),
  join: $('join'), leave: $('leave'),
  seats: $('seats'), seatsHeading: $('seats-heading'), seatmap: $('seatmap'), overview: $('overview'),
  sectionView: $('section-view'), sectionHeading: $('section-heading'), sectionAvailability: $('section-availability'),
  back: $('back'), rowsPager: $('rows-pager'), rowsPrev: $('rows-prev'), rowsNext: $('rows-next'),
  rowsPage: $('rows-page'), rowsStatus: $('rows-status'), rowsEnd: $('rows-end'),
  rowsPrevEnd: $('rows-prev-end'), rowsNextEnd: $('rows-next-end'),
  selection: $('selection'), hold: $('hold'), refresh: $('refresh'), seatsUpdated: $('seats-updated'),
  holdMinutes: $('hold-minutes'),
  order: $('order'), orderHeading: $('order-heading'), orderDetails: $('order-details'),
  countdown: $('countdown'), orderState: $('order-state'), pay: $('pay'), release: $('release'),
  ticketSection: $('ticket-section'), ticketHeading: $('ticket-heading'), ticketWait: $('ticket-wait'),
  ticket: $('ticket'), again: $('again'), dismiss: $('dismiss'),
};

const params = new URLSearchParams(location.search);

const state = {
  eventId: 'demo',
  eventName: '',
  currency: 'KRW',
  holdSeconds: 300,
  customer: '',
  // idle | joining | waiting | choosing | holding | held | paying | paid | closed
  phase: 'idle',
  queueId: null, // the latest signed ticket: what a poll (the claim) and a reload use
  number: null, // our queue number, once known
  entrant: null, // before the draw: our hash in the pre-queue, to find the number by
  startDistance: null, // the distance to the front when first seen, for the progress bar
  restoreAnswered: null, // the status's restoredAt we last polled for
  accessToken: null,
  admissionExpiresAt: null,
  layout: null, // {version, sections: [{name, price, currency, rows: [{name, seats, first}], seats}], places}
  availability: null, // per layout section: {seats, available, bits} (bit i: seat i is available)
  seatsLoading: false,
  view: { section: null, firstRow: 0 }, // the open section (its name) and its first row shown
  partySize: DEFAULT_PARTY_SIZE, // how many seats best available asks for
  bestAvailable: null, // {section, quantity} while a best-available hold is asked for
  chosen: [],
  justTaken: new Map(), // seatId -> time (ms) until which it is shown taken whatever the map says
  order: null,
  clockSkewMs: 0, // server clock minus ours, from the Date header
  pollDeferred: false,
  warnedOneMinute: false,
};

// ---------------------------------------------------------------------------------------------
// Small helpers

const timers = {};
function later(name, ms, fn) {
  clearTimeout(timers[name]);
  timers[name] = setTimeout(() => { delete timers[name]; fn(); }, Math.max(0, ms));
}
function cancel(name) {
  clearTimeout(timers[name]);
  delete timers[name];
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Up to 20 % random jitter on top of a server-given delay, as the contract asks. */
const withJitter = (seconds) => seconds * 1000 * (1 + Math.random() * 0.2);
const enc = encodeURIComponent;

/** Builds an element: h('p', {class: 'x', dataset: {a: 1}}, 'text', child). Never parses HTML. */
function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function randomCustomerId() {
  const bytes = crypto.getRandomValues(new Uint8Array(3));
  return `fan-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

function base64url(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** An unsigned JWT (alg "none") naming the customer: local development only. */
function unsignedJwt(sub) {
  return `${base64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url(JSON.stringify({ sub }))}.`;
}

// ---------------------------------------------------------------------------------------------
// Money and time

const formatters = new Map();
function currencyFormatter(currency, display = 'symbol') {
  const key = `${currency}|${display}`;
  if (!formatters.has(key)) {
    let f;
    try {
      f = new Intl.NumberFormat(undefined, { style: 'currency', currency, currencyDisplay: display });
    } catch {
      f = null; // unknown currency code
    }
    formatters.set(key, f);
  }
  return formatters.get(key);
}

/** Amounts are integers in the currency's minor units (KRW has none: 150000 is 150,000 won). */
function money(amount, currency, display = 'symbol') {
  const f = currencyFormatter(currency, display);
  if (!f) return `${amount} ${currency}`;
  const digits = f.resolvedOptions().maximumFractionDigits;
  return f.format(amount / 10 ** digits);
}

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const serverNow = () => Date.now() + state.clockSkewMs;

/** Our clock's offset from the server's, from a Date header (whole seconds, so only an
 *  offset of more than two seconds is trusted; smaller ones are rounding). */
function noteServerDate(dateHeader) {
  const t = Date.parse(dateHeader ?? '');
  if (Number.isNaN(t)) return;
  const skew = t + 500 - Date.now();
  state.clockSkewMs = Math.abs(skew) > 2000 ? skew : 0;
}

function describeEta(seconds) {
  if (seconds < 60) return 'less than a minute';
  if (seconds < 3600) {
    const m = Math.round(seconds / 60);
    return `about ${m} minute${m === 1 ? '' : 's'}`;
  }
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.round((seconds % 3600) / 60);
  return `about ${hours} h ${minutes} min`;
}

function mmss(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  return `${String(Math.floor(total / 60)).padStart(2, '0')}:${String(total % 60).padStart(2, '0')}`;
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
const listIds = (ids) => ids.join(', ');

// ---------------------------------------------------------------------------------------------
// The API

class NetworkError extends Error {}

/** One request. Resolves to {status, data, retryAfter}; rejects only when the server is unreachable.
 *  Public documents (`auth: false`) go without a name, as the CDN serves them to everyone, and
 *  may come from the browser's cache (`cache`). */
async function api(method, path, { body, headers = {}, auth = true, cache = 'no-store' } = {}) {
  const init = {
    method,
    cache,
    headers: { Accept: 'application/json', ...(auth ? { Authorization: `Bearer ${unsignedJwt(state.customer)}` } : {}), ...headers },
  };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new NetworkError(error?.message ?? 'network error');
  }
  const retryHeader = response.headers.get('Retry-After');
  const retryAfter = retryHeader !== null && /^\d+$/.test(retryHeader.trim()) ? Number(retryHeader) : null;
  let data = null;
  if (response.status !== 204) {
    const text = await response.text().catch(() => '');
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
  }
  return { status: response.status, data, retryAfter, date: response.headers.get('Date') };
}

/** A human explanation of a failed answer. Never shows raw JSON. */
function problem(r) {
  const error = r.data && typeof r.data === 'object' ? r.data.error : null;
  if (error && typeof error.message === 'string') {
    return {
      code: String(error.code ?? ''),
      message: sentence(error.message),
      seatIds: Array.isArray(error.seatIds) ? error.seatIds.map(String) : [],
      orderId: typeof error.orderId === 'string' ? error.orderId : null,
    };
  }
  if (r.data && typeof r.data.message === 'string') {
    // API Gateway's own body (401 Unauthorized, 429 throttled, ...).
    return { code: `http_${r.status}`, message: sentence(r.data.message), seatIds: [] };
  }
  const generic = {
    401: 'You are not signed in.',
    403: 'You are not allowed to do that.',
    404: 'Not found.',
    429: 'Too many requests; please wait a moment.',
    500: 'Something went wrong on our side.',
    502: 'The server is not answering properly.',
    503: 'The service is busy.',
    504: 'The server took too long to answer.',
  };
  return { code: `http_${r.status}`, message: generic[r.status] ?? `Unexpected answer from the server (HTTP ${r.status}).`, seatIds: [] };
}

function sentence(text) {
  const t = String(text).trim();
  if (!t) return 'Something went wrong.';
  const s = t[0].toUpperCase() + t.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

const UNREACHABLE = 'Cannot reach the server. Check your connection;';
/** Said while the server restores the queue after losing its cache (503 `queue_recovering`):
 *  nothing is lost, the page carries on by itself. */
const RECOVERING = 'The queue is recovering from an outage. Your place is kept: stay on this page, it carries on by itself.';
const recovering = (r) => r.status === 503 && r.data?.error?.code === 'queue_recovering';

// ---------------------------------------------------------------------------------------------
// Notices

/** Shows the latest notice. kind: info | success | error. `code`: the API's error code, kept
 *  on the notice (data-code); `action`: {label, run}, a button offering the obvious next step. */
function notify(text, kind = 'info', { code, action } = {}) {
  // role=alert makes errors interrupt; everything else is announced politely.
  el.message.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  el.message.setAttribute('aria-live', kind === 'error' ? 'assertive' : 'polite');
  el.message.dataset.kind = kind;
  if (code) el.message.dataset.code = code;
  else delete el.message.dataset.code;
  el.message.replaceChildren(
    h('span', { class: 'message-icon', 'aria-hidden': 'true' }, { info: 'ℹ', success: '✓', error: '!' }[kind] ?? 'ℹ'),
    h('span', { class: 'message-text' },
      h('strong', {}, { info: 'Note: ', success: 'Done: ', error: 'Problem: ' }[kind] ?? ''), text,
      action ? h('button', { type: 'button', class: 'secondary notice-action', onclick: () => { clearNotice(); action.run(); } }, action.label) : null),
  );
  el.dismiss.hidden = false;
}

function clearNotice() {
  el.dismiss.hidden = true;
  el.message.replaceChildren();
  delete el.message.dataset.kind;
  el.message.setAttribute('role', 'status');
  el.message.setAttribute('aria-live', 'polite');
}

// ---------------------------------------------------------------------------------------------
// Session (survives a reload of this tab)

const CUSTOMER_KEY = 'lineup.customer';
const sessionKey = () => `lineup.session.${state.eventId}.${state.customer}`;
function loadSession() {
  try {
    return JSON.parse(sessionStorage.getItem(sessionKey()) ?? 'null') ?? {};
  } catch {
    return {};
  }
}
function saveSession(patch) {
  try {
    const next = { ...loadSession(), ...patch };
    for (const key of Object.keys(next)) if (next[key] == null) delete next[key];
    sessionStorage.setItem(sessionKey(), JSON.stringify(next));
  } catch {
    /* storage full or disabled: nothing to keep */
  }
}

// The queue ticket survives closing the tab (localStorage): coming back, the page polls with it
// rather than joining again.
const ticketKey = () => `lineup.ticket.${state.eventId}.${state.customer}`;
function loadTicket() {
  try {
    const ticket = JSON.parse(localStorage.getItem(ticketKey()) ?? 'null');
    return ticket && typeof ticket === 'object' ? ticket : {};
  } catch {
    return {};
  }
}
function saveTicket(patch) {
  try {
    const next = { ...loadTicket(), ...patch };
    for (const key of Object.keys(next)) if (next[key] == null) delete next[key];
    localStorage.setItem(ticketKey(), JSON.stringify(next));
  } catch {
    /* storage full or disabled: a reload joins again (and keeps the place) */
  }
}
function forgetTicket() {
  try { localStorage.removeItem(ticketKey()); } catch { /* nothing kept */ }
}

// ---------------------------------------------------------------------------------------------
// Phases: which sections and buttons show

function setPhase(phase) {
  state.phase = phase;
  const inQueue = ['waiting', 'choosing', 'holding'].includes(phase);
  el.customer.disabled = !['idle', 'closed'].includes(phase);
  el.customerHint.textContent = el.customer.disabled
    ? 'Locked while you are in the queue or have an order.'
    : 'No spaces, up to 128 characters. Kept while this tab is open.';

  el.join.hidden = !['idle', 'joining', 'closed'].includes(phase);
  el.join.disabled = phase === 'joining' || phase === 'closed';
  el.join.setAttribute('aria-busy', String(phase === 'joining'));
  el.leave.hidden = !inQueue;
  el.progressWrap.hidden = phase !== 'waiting';

  el.seats.hidden = phase !== 'choosing' && phase !== 'holding';
  el.hold.disabled = phase === 'holding';
  el.hold.setAttribute('aria-busy', String(phase === 'holding' && !state.bestAvailable));
  updateOverview(); // best available is offered only while choosing

  el.order.hidden = phase !== 'held' && phase !== 'paying';
  el.pay.disabled = phase === 'paying';
  el.release.disabled = phase === 'paying';
  el.pay.setAttribute('aria-busy', String(phase === 'paying'));

  el.ticketSection.hidden = phase !== 'paid';

  if (phase === 'choosing') scheduleSeatRefresh();
  else cancel('seats');
  if (phase !== 'waiting') cancel('poll');
  if (phase !== 'held') cancel('countdown');
  updateHoldButton();
}

function setQueueStatus(status, text) {
  el.status.dataset.status = status;
  el.statusText.textContent = text;
}

function focusHeading(heading) {
  // Move keyboard and screen-reader focus to the part of the page that just appeared.
  requestAnimationFrame(() => {
    heading.scrollIntoView({ block: 'start' });
    heading.focus({ preventScroll: true });
  });
}

// ---------------------------------------------------------------------------------------------
// Start

async function start() {
  // Who: ?customer= wins, then this tab's earlier choice, else a new random id.
  const fromQuery = params.get('customer');
  let customer = fromQuery && CUSTOMER_RE.test(fromQuery) ? fromQuery : null;
  if (!customer) {
    try { customer = sessionStorage.getItem(CUSTOMER_KEY); } catch { customer = null; }
  }
  if (!customer || !CUSTOMER_RE.test(customer)) customer = randomCustomerId();
  setCustomer(customer);
  el.customer.value = customer;

  let info = null;
  try {
    const r = await api('GET', '/dev/info');
    if (r.status === 200 && r.data && typeof r.data === 'object') info = r.data;
  } catch {
    /* handled below */
  }
  if (info) {
    if (typeof info.eventId === 'string') state.eventId = info.eventId;
    if (typeof info.eventName === 'string') state.eventName = info.eventName;
    if (typeof info.currency === 'string') state.currency = info.currency;
    if (Number.isFinite(info.holdSeconds)) state.holdSeconds = info.holdSeconds;
  }
  const eventFromQuery = params.get('event');
  if (eventFromQuery) {
    if (eventFromQuery !== state.eventId) state.eventName = '';
    state.eventId = eventFromQuery;
  }
  const name = state.eventName || `Event ${state.eventId}`;
  el.eventName.textContent = name;
  document.title = `${name} · Lineup waiting room`;
  el.eventMeta.textContent = `Event id ${state.eventId}`;
  const minutes = Math.round(state.holdSeconds / 60);
  el.holdMinutes.textContent = state.holdSeconds % 60 === 0 ? plural(minutes, 'minute', 'minutes') : plural(state.holdSeconds, 'second', 'seconds');
  if (!info) notify('Could not load the event details from the server; using the defaults.', 'error');

  setPhase('idle');
  await resume();
}

function setCustomer(customer) {
  state.customer = customer;
  try { sessionStorage.setItem(CUSTOMER_KEY, customer); } catch { /* ignore */ }
}

/** After a reload: pick up an open order (this tab) or the queue ticket (this browser) of this
 *  customer. A held ticket is polled with, never joined again: the place is kept either way. */
async function resume() {
  const saved = loadSession();
  const ticket = loadTicket();
  if (saved.orderId) {
    try {
      const r = await api('GET', `/orders/${enc(saved.orderId)}`);
      if (r.status === 200 && r.data) {
        const order = r.data;
        if (order.status === 'PENDING' && Date.parse(order.expiresAt) > serverNow()) {
          noteServerDate(r.date);
          if (ticket.queueId) state.queueId = ticket.queueId;
          showOrder(order, { announce: false });
          notify('Welcome back: your seats are still held.', 'info');
          return;
        }
        if (order.status === 'PAID') {
          state.order = order;
          setPhase('paid');
          waitForTicket();
          return;
        }
      }
    } catch {
      /* fall through */
    }
    saveSession({ orderId: null });
  }
  if (ticket.queueId) {
    state.queueId = ticket.queueId;
    state.number = Number.isInteger(ticket.number) ? ticket.number : null;
    state.entrant = typeof ticket.entrant === 'string' ? ticket.entrant : null;
    setQueueStatus('waiting', 'Checking your place in the queue…');
    await pollQueue();
  }
}

// ---------------------------------------------------------------------------------------------
// The queue
//
// Joining gives a queue number and a signed ticket (queueId). From then on the page reads the
// event's public status, which the CDN serves (no name, the same for everyone): the distance is
// `number − servingUpTo`, the ETA that distance at `advancePerSecond`, and the next read comes
// after a tenth of the ETA (5 s near the front, at most 5 minutes far back). When `servingUpTo`
// reaches the number, the page claims once at the server, which answers with the access token.
// Before opening there is no number: the pre-queue is drawn at opening, and the page finds its
// number in the published draw by the entrant hash the join gave. The server is asked only to
// join, to claim, when the draw does not list us, and once after a restore the status announces
// (`restoredAt`: the server lost the queue; our older ticket puts us back).

async function join() {
  if (!validateCustomer({ resumeSession: false })) {
    el.customer.focus();
    return;
  }
  setPhase('joining');
  clearNotice();
  setQueueStatus('joining', 'Joining the queue…');
  let r;
  try {
    r = await api('POST', `/events/${enc(state.eventId)}/queue`, { body: {} });
  } catch {
    setQueueStatus('idle', 'You are not in the queue yet.');
    setPhase('idle');
    notify(`${UNREACHABLE} then try joining again.`, 'error');
    return;
  }
  if (r.status === 200 || r.status === 201) {
    state.startDistance = null;
    handleStanding(r.data, r.retryAfter, r.date);
    if (state.phase === 'waiting') focusHeading(el.queueHeading);
    return;
  }
  const p = problem(r);
  if (r.status === 503) {
    const s = r.retryAfter ?? DEFAULT_POLL_S;
    setQueueStatus('joining', `The service is busy; trying again in ${s} s…`);
    notify(recovering(r) ? RECOVERING : `The service is busy, retrying in ${s} seconds.`, 'info', { code: p.code });
    later('join', withJitter(s), join);
    return;
  }
  if (p.code === 'queue_closed') {
    setQueueStatus('closed', 'The queue is closed: the event is sold out or was closed.');
    setPhase('closed');
    notify(p.message, 'error');
    return;
  }
  setQueueStatus('idle', 'You are not in the queue yet.');
  setPhase('idle');
  notify(p.message, 'error');
}

/** What joining or a poll (the claim) said: waiting (with a number, or in the pre-queue),
 *  admitted, expired or closed. */
function handleStanding(standing, retryAfter, date) {
  if (!standing || typeof standing !== 'object') {
    notify('The server sent an answer this page does not understand; trying again shortly.', 'error');
    setPhase('waiting');
    scheduleStatusRead(DEFAULT_POLL_S);
    return;
  }
  noteServerDate(date);
  if (typeof standing.queueId === 'string') {
    // The latest ticket: once it states the number, it is the one that restores the place.
    state.queueId = standing.queueId;
    saveTicket({ queueId: standing.queueId });
  }
  switch (standing.status) {
    case 'waiting': {
      setQueueStatus('waiting', 'You are in the queue. Keep this page open; it updates by itself.');
      if (Number.isInteger(standing.number)) {
        learnNumber(standing.number);
        showPlace(standing.number, Number(standing.servingUpTo) || 0, Number(standing.etaSeconds) || 0);
      } else if (typeof standing.entrant === 'string') {
        state.entrant = standing.entrant;
        state.number = null;
        saveTicket({ entrant: standing.entrant, number: null });
        showPreQueue({ opensAt: standing.opensAt, etaSeconds: Number(standing.etaSeconds) || 0 });
      }
      if (state.phase !== 'waiting') setPhase('waiting');
      scheduleStatusRead(retryAfter ?? DEFAULT_POLL_S);
      break;
    }
    case 'admitted': {
      state.accessToken = standing.accessToken;
      state.admissionExpiresAt = standing.expiresAt;
      const until = Date.parse(standing.expiresAt);
      setQueueStatus('admitted', `It is your turn! Hold your seats before ${timeFormat.format(new Date(until - state.clockSkewMs))}.`);
      clearPlace();
      if (state.number !== null) {
        el.position.dataset.number = String(state.number);
        el.position.textContent = `Your number ${state.number.toLocaleString()} has been called.`;
      }
      el.progress.max = 1;
      el.progress.value = 1;
      el.progress.setAttribute('aria-valuetext', 'At the front');
      if (!Number.isNaN(until)) later('admission', until - serverNow() + 1000, admissionMayHaveEnded);
      if (!['held', 'paying', 'paid'].includes(state.phase)) enterSeats();
      break;
    }
    case 'expired':
      endQueue('expired', 'Your turn ended before you held seats. You can join the queue again (at the back).', 'Join the queue again');
      notify('Your admission lapsed unused. Join again to get a new place.', 'error');
      break;
    case 'closed':
      endQueue('closed', 'The queue is closed: the event is sold out or was closed.', 'Join the queue');
      setPhase('closed');
      notify('Sorry, this event is sold out or closed.', 'error');
      break;
    default:
      notify('The server sent a queue status this page does not know; trying again shortly.', 'error');
      scheduleStatusRead(DEFAULT_POLL_S);
  }
}

function learnNumber(number) {
  state.number = number;
  state.entrant = null;
  saveTicket({ number, entrant: null });
}

/** The number, where the queue is, the distance and the ETA. */
function showPlace(number, servingUpTo, etaSeconds) {
  const distance = Math.max(0, number - servingUpTo);
  el.position.dataset.number = String(number);
  el.position.dataset.servingUpTo = String(servingUpTo);
  el.position.dataset.distance = String(distance);
  delete el.position.dataset.preQueue;
  if (distance === 0) {
    el.position.textContent = `Your number is ${number.toLocaleString()}, and it has been called!`;
    el.eta.textContent = 'Claiming your turn…';
  } else {
    el.position.textContent = `Your number is ${number.toLocaleString()}.`;
    el.eta.textContent = `Now serving up to ${servingUpTo.toLocaleString()}: ${plural(distance, 'number', 'numbers')} to go ` +
      `before yours. Estimated wait: ${describeEta(etaSeconds)}.`;
  }
  // From where you first stood (a sliver) to the front (full: called).
  if (state.startDistance === null || distance > state.startDistance) state.startDistance = distance;
  el.progress.max = state.startDistance + 1;
  el.progress.value = state.startDistance - distance + 1;
  el.progress.setAttribute('aria-valuetext', distance === 0 ? 'Your number is called' : `${plural(distance, 'number', 'numbers')} to go`);
}

/** Before the draw: no number yet. `drawPublished`: the draw is out, the number is being found. */
function showPreQueue({ opensAt, etaSeconds, drawPublished = false }) {
  delete el.position.dataset.number;
  delete el.position.dataset.servingUpTo;
  delete el.position.dataset.distance;
  el.position.dataset.preQueue = 'true';
  state.startDistance = null;
  el.progress.removeAttribute('value'); // indeterminate until there is a number
  if (drawPublished) {
    el.position.textContent = 'You are in the pre-queue: the draw is published, looking up your number…';
    el.eta.textContent = '';
    el.progress.setAttribute('aria-valuetext', 'Looking up your number in the draw');
    return;
  }
  // No number before opening: pre-queue places are drawn, and a number shown early would let
  // someone with many accounts keep only the one that drew best.
  el.position.textContent = 'You are in the pre-queue: the draw happens at opening.';
  const opens = opensAt && !Number.isNaN(Date.parse(opensAt)) ? ` at ${timeFormat.format(new Date(Date.parse(opensAt) - state.clockSkewMs))}` : '';
  el.eta.textContent = etaSeconds > 0
    ? `The sale opens${opens}, in ${describeEta(etaSeconds)}. Everyone who joins before then gets a number from the draw, ahead of later arrivals; joining again does not change it.`
    : 'The sale is opening: the draw gives everyone in the pre-queue a number, ahead of later arrivals.';
  el.progress.setAttribute('aria-valuetext', 'Waiting for the draw at opening');
}

function clearPlace() {
  el.position.textContent = '';
  for (const key of ['number', 'servingUpTo', 'distance', 'preQueue']) delete el.position.dataset[key];
  el.eta.textContent = '';
}

function endQueue(status, text, joinLabel) {
  state.accessToken = null;
  state.admissionExpiresAt = null;
  state.chosen = [];
  state.number = null;
  state.entrant = null;
  cancel('admission');
  setQueueStatus(status, text);
  clearPlace();
  el.join.textContent = joinLabel;
  forgetTicket();
  setPhase('idle');
}

/** The status is read again after `seconds` (a small jitter added, so a crowd does not read in
 *  lockstep); once the page is visible again if it is hidden then. */
function scheduleStatusRead(seconds) {
  later('poll', withJitter(seconds), () => {
    if (document.visibilityState === 'hidden') {
      state.pollDeferred = true;
      return;
    }
    readStatus();
  });
}

/** Seconds until `number` is called at the status's pace (as `EventStatus::eta`). */
function etaFor(status, number) {
  const distance = Math.max(0, number - (Number(status.servingUpTo) || 0));
  const advance = Number(status.advancePerSecond);
  return distance / (Number.isFinite(advance) && advance > 0 ? advance : 1);
}

/** When to read the status next, given an ETA: a tenth of it, within 5 s and 5 minutes (as
 *  `wait_policy::next_status_read`). */
function nextRead(etaSeconds) {
  return Math.min(MAX_STATUS_READ_S, Math.max(DEFAULT_POLL_S, Math.ceil(Math.floor(etaSeconds) / 10)));
}

const saleOver = (status) => status.state === 'closed' || status.state === 'sold_out';

/** Whether the status announces a restore (the server lost the queue and re-loaded it) that our
 *  ticket predates: then one poll with it puts us back. Once per restore. */
function restoreToAnswer(status) {
  const restoredAt = status.restoredAt;
  if (typeof restoredAt !== 'string' || restoredAt === state.restoreAnswered) return false;
  const issued = Number(String(state.queueId).split('.')[1]); // <number>.<issued ms>.<mac>
  const restored = Date.parse(restoredAt);
  return !(Number.isFinite(issued) && Number.isFinite(restored)) || issued < restored;
}

/** One read of the public status (through the CDN; no name sent), and what it means for us. */
async function readStatus() {
  if (state.phase !== 'waiting' || !state.queueId) return;
  let status;
  try {
    const response = await fetch(`/events/${enc(state.eventId)}/status`, { headers: { Accept: 'application/json' } });
    if (response.status !== 200) {
      const retry = Number(response.headers.get('Retry-After'));
      if (response.status === 503) {
        const data = await response.json().catch(() => null);
        if (data?.error?.code === 'queue_recovering') notify(RECOVERING, 'info', { code: 'queue_recovering' });
      }
      scheduleStatusRead(Number.isFinite(retry) && retry > 0 ? retry : DEFAULT_POLL_S);
      return;
    }
    status = await response.json();
  } catch {
    notify(`${UNREACHABLE} trying again in ${DEFAULT_POLL_S} seconds.`, 'error');
    scheduleStatusRead(DEFAULT_POLL_S);
    return;
  }
  if (state.phase !== 'waiting') return;
  if (el.message.dataset.kind === 'error') clearNotice();
  if (restoreToAnswer(status)) {
    state.restoreAnswered = status.restoredAt;
    notify('The queue was restored after an outage: checking your place…', 'info');
    pollQueue(); // puts us back at our number (or claims, if it was called)
    return;
  }
  const number = state.number;
  if (number !== null && Number(status.servingUpTo) >= number) {
    showPlace(number, Number(status.servingUpTo), 0);
    pollQueue(); // the claim
    return;
  }
  if (saleOver(status)) {
    endQueue('closed', 'The queue is closed: the event is sold out or was closed.', 'Join the queue');
    setPhase('closed');
    notify('Sorry, this event is sold out or closed.', 'error');
    return;
  }
  if (number !== null) {
    const eta = etaFor(status, number);
    showPlace(number, Number(status.servingUpTo) || 0, eta);
    scheduleStatusRead(nextRead(eta));
    return;
  }
  const prefixLength = Number(status.draw?.prefixLength);
  if (status.draw?.published && Number.isInteger(prefixLength) && state.entrant) {
    showPreQueue({ drawPublished: true });
    // Spread over a few seconds so that a big pre-queue does not fetch its chunks at once;
    // within a quarter of the claim window, as the first numbers are called at once.
    const spread = Math.min(CHUNK_FETCH_SPREAD_S, (Number(status.claimWindowSeconds) || 60) / 4);
    later('poll', Math.random() * spread * 1000, () => findNumber(prefixLength));
    return;
  }
  const untilOpening = Math.max(0, (Date.parse(status.opensAt) - serverNow()) / 1000) || 0;
  showPreQueue({ opensAt: status.opensAt, etaSeconds: untilOpening });
  scheduleStatusRead(status.state === 'pre_queue' ? nextRead(untilOpening) : DEFAULT_POLL_S);
}

/** Our number in the published draw: the chunk of entrants sharing our hash's first digits.
 *  Only if it does not list us (we left) does the server decide. */
async function findNumber(prefixLength) {
  const entrant = state.entrant;
  if (state.phase !== 'waiting' || !entrant) return;
  let found = null;
  try {
    const response = await fetch(`/events/${enc(state.eventId)}/draw/${enc(entrant.slice(0, prefixLength))}`,
      { headers: { Accept: 'application/json' } });
    if (response.status === 200) {
      const chunk = await response.json();
      const entry = Array.isArray(chunk?.entries) ? chunk.entries.find((e) => Array.isArray(e) && e[0] === entrant) : null;
      if (entry && Number.isInteger(entry[1])) found = entry[1];
    }
  } catch {
    scheduleStatusRead(DEFAULT_POLL_S); // read the status again, then fetch again
    return;
  }
  if (found === null) {
    pollQueue();
    return;
  }
  learnNumber(found);
  notify(`The draw is published: your number is ${found.toLocaleString()}.`, 'info');
  readStatus(); // where the queue is now
}

/** Asks the server where we stand: the claim when our number is called, after a reload, or
 *  when the draw does not list us. */
async function pollQueue() {
  if (!state.queueId) return;
  let r;
  try {
    r = await api('GET', `/events/${enc(state.eventId)}/queue/${enc(state.queueId)}`);
  } catch {
    notify(`${UNREACHABLE} trying again in ${DEFAULT_POLL_S} seconds.`, 'error');
    if (state.phase !== 'waiting') setPhase('waiting');
    later('poll', withJitter(DEFAULT_POLL_S), pollQueue);
    return;
  }
  if (r.status === 200) {
    if (el.message.dataset.kind === 'error' && state.phase === 'waiting') clearNotice();
    handleStanding(r.data, r.retryAfter, r.date);
    return;
  }
  if (r.status === 503) {
    const s = r.retryAfter ?? DEFAULT_POLL_S;
    notify(recovering(r) ? RECOVERING : `The service is busy, retrying in ${s} seconds.`, 'info', { code: problem(r).code });
    if (state.phase !== 'waiting') setPhase('waiting');
    later('poll', withJitter(s), pollQueue);
    return;
  }
  const p = problem(r);
  if (r.status === 404) {
    endQueue('idle', 'You are not in the queue.', 'Join the queue');
    notify('You are no longer in the queue. Join again to get a place.', 'error');
    return;
  }
  notify(p.message, 'error');
  if (state.phase === 'waiting') later('poll', withJitter(DEFAULT_POLL_S), pollQueue);
}

async function leave() {
  if (!state.queueId) return;
  el.leave.disabled = true;
  try {
    const r = await api('DELETE', `/events/${enc(state.eventId)}/queue/${enc(state.queueId)}`);
    if (r.status === 204 || r.status === 404) {
      endQueue('left', 'You left the queue.', 'Join the queue again');
      notify('You left the queue. Your place has gone to the next person.', 'success');
      el.join.focus();
    } else {
      notify(problem(r).message, 'error');
    }
  } catch {
    notify(`${UNREACHABLE} you are still in the queue.`, 'error');
  } finally {
    el.leave.disabled = false;
  }
}

/** The admission's end time passed while choosing: ask the server what we are now. */
function admissionMayHaveEnded() {
  if (state.phase === 'choosing') pollQueue();
}

// ---------------------------------------------------------------------------------------------
// The seat map
//
// Two public documents, both cacheable by the CDN (no name sent): the event's layout (sections,
// their prices, rows nearest the stage first, seats in order along each row), immutable and
// fetched once per version; and its availability, a bitset per section (bit i set: the
// section's seat i in layout order is available), read on every refresh. Held and sold seats
// are not told apart: both are "taken". The page shows the sections first, with a best-available
// hold in each; opening a section shows its seats, a page of rows at a time, so that even a
// stadium never turns into tens of thousands of buttons.

function enterSeats({ announce = true } = {}) {
  const wasChoosing = state.phase === 'choosing' || state.phase === 'holding';
  setPhase('choosing');
  if (!wasChoosing) {
    if (announce) notify('You are in! Ask for the best seats available in a section, or open a section and choose up to 4 seats yourself.', 'success');
    focusHeading(el.seatsHeading);
  }
  refreshSeats();
}

function scheduleSeatRefresh(ms = SEAT_REFRESH_MS) {
  later('seats', ms, () => {
    if (state.phase !== 'choosing') return;
    if (document.visibilityState === 'hidden') {
      scheduleSeatRefresh();
      return;
    }
    refreshSeats();
  });
}

/** Reads the availability (and, when its layout version is new to us, the layout first).
 *  `announce`: the customer asked (Refresh), so the browser's own copy, which may be a few
 *  seconds old (max-age and stale-while-revalidate), won't do. */
async function refreshSeats({ announce = false } = {}) {
  if (state.seatsLoading) return;
  state.seatsLoading = true;
  el.refresh.setAttribute('aria-busy', 'true');
  let next = SEAT_REFRESH_MS;
  try {
    const r = await api('GET', `/events/${enc(state.eventId)}/seats`, { auth: false, cache: announce ? 'no-cache' : 'default' });
    if (r.status === 200 && isAvailability(r.data)) {
      if (state.layout?.version !== r.data.layoutVersion) await loadLayout(r.data);
      if (state.layout?.version === r.data.layoutVersion) {
        applyAvailability(r.data);
        el.seatsUpdated.textContent = `Seat map updated at ${new Date().toLocaleTimeString()}.`;
        if (announce) notify('Seat map refreshed.', 'info');
      }
    } else if (r.status === 503) {
      // Rebuilt after the server lost it, or busy: come back when the server says.
      const s = r.retryAfter ?? 2;
      next = withJitter(s);
      el.seatsUpdated.textContent = problem(r).code === 'availability_rebuilding'
        ? 'The seat map is being rebuilt; it will be back in a few seconds.'
        : 'The service is busy; the seat map will refresh shortly.';
    } else if (r.status === 404) {
      notify('This event has no seats on sale.', 'error');
    } else {
      notify(`Could not load the seat map. ${problem(r).message}`, 'error');
    }
  } catch {
    el.seatsUpdated.textContent = 'Cannot reach the server; the seat map may be out of date.';
  } finally {
    state.seatsLoading = false;
    el.refresh.removeAttribute('aria-busy');
    if (state.phase === 'choosing') scheduleSeatRefresh(next);
  }
}

function isAvailability(data) {
  return data && typeof data.layoutVersion === 'string' && Array.isArray(data.sections) &&
    data.sections.every((s) => s && typeof s.name === 'string' && typeof s.bits === 'string');
}

/** The layout of the availability's version: immutable, so fetched once per version (and the
 *  browser may keep it too). */
async function loadLayout(availability) {
  const version = availability.layoutVersion;
  const path = typeof availability.layout === 'string' && availability.layout.startsWith('/')
    ? availability.layout
    : `/events/${enc(state.eventId)}/layout/${enc(version)}`;
  const r = await api('GET', path, { auth: false, cache: 'default' });
  if (r.status !== 200 || !isLayout(r.data) || r.data.version !== version) {
    el.seatsUpdated.textContent = 'Could not load the seat layout; trying again shortly.';
    return;
  }
  const changed = state.layout !== null;
  state.layout = parseLayout(r.data);
  state.availability = null;
  // A new layout may lack seats or sections we had.
  state.chosen = state.chosen.filter((id) => state.layout.places.has(id));
  if (state.view.section !== null && !sectionByName(state.view.section)) state.view.section = null;
  buildOverview();
  buildSeatMap();
  showView();
  if (changed) notify('The seat map changed: the venue layout was updated. Please check your choice.', 'info');
}

function isLayout(data) {
  return data && typeof data.version === 'string' && Array.isArray(data.sections) &&
    data.sections.every((s) => s && typeof s.name === 'string' && Array.isArray(s.rows) &&
      s.rows.every((row) => row && Array.isArray(row.seats)));
}

/** Sections with their rows; each row knows the index of its first seat in the section (the
 *  availability's bit order), and every seat id its place. */
function parseLayout(doc) {
  const places = new Map();
  const sections = doc.sections.map((section, s) => {
    let next = 0;
    const rows = section.rows.map((row, r) => {
      const first = next;
      const seats = row.seats.map(String);
      seats.forEach((seatId, n) => places.set(seatId, { section: s, row: r, index: first + n }));
      next += seats.length;
      return { name: String(row.name ?? r + 1), seats, first };
    });
    return {
      name: section.name,
      price: Number(section.price) || 0,
      currency: String(section.currency ?? state.currency),
      rows,
      seats: next,
    };
  });
  return { version: doc.version, sections, places };
}

function base64Bytes(base64) {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function applyAvailability(data) {
  const byName = new Map(data.sections.map((s) => [s.name, s]));
  state.availability = state.layout.sections.map((section) => {
    const s = byName.get(section.name);
    if (!s) return { seats: section.seats, available: 0, bits: new Uint8Array(0) };
    let bits;
    try {
      bits = base64Bytes(s.bits);
    } catch {
      bits = new Uint8Array(0); // unreadable: shown taken until the next refresh
    }
    return { seats: Number(s.seats) || section.seats, available: Number(s.available) || 0, bits };
  });

  // Seats that were chosen but are no longer available.
  const lost = state.chosen.filter((id) => seatStatus(id) !== 'available');
  if (lost.length) {
    state.chosen = state.chosen.filter((id) => !lost.includes(id));
    notify(`${lost.length === 1 ? 'Seat' : 'Seats'} ${listIds(lost)} ${lost.length === 1 ? 'was' : 'were'} just taken by someone else and removed from your choice.`, 'error');
  }
  updateOverview();
  updateSeatButtons();
  updateSelection();
}

/** 'available' or 'taken' (held or sold: the availability does not tell which). Seats a hold
 *  was just refused for stay taken a while, whatever a lagging availability says. */
function seatStatus(seatId) {
  const place = state.layout?.places.get(seatId);
  const bits = place && state.availability?.[place.section]?.bits;
  if (!bits) return 'taken';
  const until = state.justTaken.get(seatId);
  if (until !== undefined) {
    if (until > Date.now()) return 'taken';
    state.justTaken.delete(seatId);
  }
  return (bits[place.index >> 3] ?? 0) & (0x80 >> (place.index & 7)) ? 'available' : 'taken';
}

const sectionByName = (name) => state.layout?.sections.find((s) => s.name === name) ?? null;
const sectionAvailability = (name) => state.availability?.[state.layout.sections.findIndex((s) => s.name === name)] ?? null;
const rowSpan = (section) => (section.rows.length ? `rows ${section.rows[0].name}–${section.rows.at(-1).name}` : 'no rows');

function availabilityText(available, total) {
  return available === 0
    ? `Sold out or held (${total.toLocaleString()} seats).`
    : `${available.toLocaleString()} of ${total.toLocaleString()} seats available.`;
}

// --- The overview: one entry per section -----------------------------------------------------

function buildOverview() {
  if (!state.layout) return;
  const quantities = Array.from({ length: MAX_SEATS }, (_, i) => i + 1);
  el.overview.replaceChildren(h('ul', { class: 'section-list' }, state.layout.sections.map((section, i) => {
    const nameId = `section-${i + 1}-name`;
    const quantityId = `section-${i + 1}-quantity`;
    const inSection = h('span', { class: 'visually-hidden' }, ` in ${section.name}`);
    return h('li', { class: 'section-card', dataset: { section: section.name } },
      h('h3', { id: nameId, class: 'section-card-name' }, section.name),
      h('p', { class: 'section-price' }, `${money(section.price, section.currency)} a seat`),
      h('p', { class: 'section-count' }),
      // The share still available, drawn; the sentence above says it in words.
      h('div', { class: 'availability-bar', 'aria-hidden': 'true' }, h('span', { class: 'availability-fill' })),
      h('p', { class: 'hint section-rows' }, `${section.rows.length.toLocaleString()} ${section.rows.length === 1 ? 'row' : 'rows'} (${rowSpan(section)}), row ${section.rows[0]?.name ?? ''} nearest the stage.`),
      h('div', { class: 'best-available' },
        h('label', { for: quantityId }, 'Seats', inSection.cloneNode(true)),
        h('select', { id: quantityId, class: 'quantity', dataset: { section: section.name }, onchange: (e) => setPartySize(Number(e.target.value)) },
          quantities.map((n) => h('option', { value: n, selected: n === state.partySize }, n))),
        h('button', {
          type: 'button', class: 'primary best-available-button', dataset: { section: section.name },
          'aria-describedby': nameId, onclick: () => holdBestAvailable(section.name),
        }, 'Best available', inSection.cloneNode(true))),
      h('button', {
        type: 'button', class: 'secondary open-section', dataset: { section: section.name },
        onclick: () => openSection(section.name),
      }, 'Choose seats yourself', inSection.cloneNode(true)));
  })));
  el.overview.setAttribute('aria-busy', 'false');
  updateOverview();
}

/** One number of seats wanted for the whole page: choosing it in one section sets it in all. */
function setPartySize(n) {
  if (!Number.isInteger(n) || n < 1 || n > MAX_SEATS) return;
  state.partySize = n;
  for (const select of el.overview.querySelectorAll('select.quantity')) select.value = String(n);
}

function updateOverview() {
  if (!state.layout) return;
  for (const card of el.overview.querySelectorAll('.section-card')) {
    const name = card.dataset.section;
    const section = sectionByName(name);
    const counts = sectionAvailability(name);
    const count = card.querySelector('.section-count');
    const button = card.querySelector('.best-available-button');
    if (!section) continue;
    if (!counts) {
      count.textContent = `${section.seats.toLocaleString()} seats; checking which are available…`;
    } else {
      count.textContent = availabilityText(counts.available, counts.seats);
      count.dataset.available = String(counts.available);
      count.dataset.seats = String(counts.seats);
      card.querySelector('.availability-fill').style.width = `${counts.seats ? (100 * counts.available) / counts.seats : 0}%`;
    }
    card.dataset.soldOut = String(counts?.available === 0);
    const busy = state.phase === 'holding' && state.bestAvailable?.section === name;
    button.disabled = state.phase === 'holding' || counts?.available === 0;
    button.setAttribute('aria-busy', String(busy));
    button.firstChild.textContent = busy ? 'Holding…' : 'Best available';
  }
}

// --- One section's seats, a page of rows at a time -------------------------------------------

function openSection(name) {
  if (!sectionByName(name)) return;
  state.view = { section: name, firstRow: 0 };
  buildSeatMap();
  showView();
  focusHeading(el.sectionHeading);
}

function showOverview() {
  const from = state.view.section;
  state.view = { section: null, firstRow: 0 };
  el.seatmap.replaceChildren(); // no seat buttons are kept out of sight
  showView();
  const back = from && el.overview.querySelector(`.open-section[data-section="${CSS.escape(from)}"]`);
  requestAnimationFrame(() => (back ?? el.seatsHeading).focus());
}

/** Which of the two shows: the overview, or the open section. */
function showView() {
  const open = state.view.section !== null && sectionByName(state.view.section) !== null;
  el.overview.hidden = open;
  el.sectionView.hidden = !open;
  el.seats.dataset.view = open ? 'section' : 'overview';
  updateHoldButton();
}

function changeRows(firstRow) {
  const section = sectionByName(state.view.section);
  if (!section) return;
  const last = Math.max(0, section.rows.length - 1);
  state.view.firstRow = Math.min(Math.max(0, firstRow), last - (last % ROWS_PER_PAGE));
  buildSeatMap();
  // From the pager under the rows, the new rows start above: bring their top into view.
  if (el.rowsPager.getBoundingClientRect().top < 0) el.rowsPager.scrollIntoView({ block: 'start' });
  if (document.activeElement?.disabled) el.rowsPage.focus();
}

function buildSeatMap() {
  const section = sectionByName(state.view.section);
  if (!section) {
    el.seatmap.replaceChildren();
    return;
  }
  const hadFocus = document.activeElement?.dataset?.seatId;
  if (state.view.firstRow >= section.rows.length) state.view.firstRow = 0; // a new layout has fewer rows
  const first = state.view.firstRow;
  const rows = section.rows.slice(first, first + ROWS_PER_PAGE);
  el.sectionHeading.replaceChildren(
    h('span', { class: 'section-name' }, section.name),
    h('span', { class: 'section-price' }, `${money(section.price, section.currency)} a seat`));
  el.seatmap.dataset.section = section.name;
  // One line per row, as in the venue; on a narrow screen the rows scroll sideways.
  el.seatmap.replaceChildren(h('div', { class: 'rows', tabindex: '0', 'aria-labelledby': 'section-heading rows-status' },
    rows.map((row, r) => {
      const labelId = `row-${first + r + 1}`;
      return h('div', { class: 'seat-row', role: 'group', 'aria-labelledby': labelId, dataset: { row: row.name } },
        h('span', { class: 'row-label', id: labelId }, h('span', { class: 'visually-hidden' }, `${section.name}, row `), row.name),
        h('div', { class: 'row-seats' }, row.seats.map((seatId) => seatButton(seatId, seatLabel(seatId, row.name)))));
    })));
  updatePager(section);
  updateSeatButtons();
  if (hadFocus) el.seatmap.querySelector(`[data-seat-id="${CSS.escape(hadFocus)}"]`)?.focus();
}

/** The pager's options (one a page of rows), the position, and which way it can go. */
function updatePager(section) {
  const pages = [];
  for (let first = 0; first < section.rows.length; first += ROWS_PER_PAGE) {
    const last = Math.min(first + ROWS_PER_PAGE, section.rows.length) - 1;
    pages.push({ first, text: `Rows ${section.rows[first].name}–${section.rows[last].name}` });
  }
  const key = `${state.layout.version}|${section.name}`;
  if (el.rowsPage.dataset.key !== key) {
    el.rowsPage.replaceChildren(...pages.map((p) => h('option', { value: p.first }, p.text)));
    el.rowsPage.dataset.key = key;
  }
  const first = state.view.firstRow;
  const last = Math.min(first + ROWS_PER_PAGE, section.rows.length) - 1;
  el.rowsPage.value = String(first);
  const position = section.rows.length
    ? `Rows ${section.rows[first].name}–${section.rows[last].name}: ${first + 1}–${last + 1} of ${section.rows.length.toLocaleString()} (row ${section.rows[0].name} nearest the stage).`
    : 'This section has no rows.';
  el.rowsStatus.textContent = position;
  el.rowsPager.hidden = pages.length <= 1;
  for (const button of [el.rowsPrev, el.rowsPrevEnd]) button.disabled = first === 0;
  for (const button of [el.rowsNext, el.rowsNextEnd]) button.disabled = last >= section.rows.length - 1;
  el.rowsEnd.hidden = pages.length <= 1;
}

/** Demo seat ids are SECTION-ROW-NUMBER (FLO-A-07): the button shows the number; other ids whole. */
function seatLabel(seatId, rowName) {
  const parts = seatId.split('-');
  return parts.length === 3 && parts[1] === rowName ? parts[2] : seatId;
}

function seatButton(seatId, label) {
  return h('button', {
    type: 'button',
    class: 'seat',
    dataset: { seatId },
    'aria-pressed': 'false',
    onclick: () => toggleSeat(seatId),
  }, h('span', { class: 'seat-mark', 'aria-hidden': 'true' }), h('span', { class: 'seat-num' }, label));
}

const STATUS_WORDS = { available: 'available', taken: 'taken (held or sold)' };

function updateSeatButtons() {
  const section = sectionByName(state.view.section);
  if (!section) return;
  const counts = sectionAvailability(section.name);
  el.sectionAvailability.textContent = counts ? availabilityText(counts.available, counts.seats) : 'Checking which seats are available…';
  for (const button of el.seatmap.querySelectorAll('button.seat')) {
    const seatId = button.dataset.seatId;
    const status = seatStatus(seatId);
    const chosen = state.chosen.includes(seatId);
    const justTaken = state.justTaken.has(seatId);
    const signature = `${status}|${chosen}|${justTaken}`;
    if (button.dataset.signature === signature) continue;
    button.dataset.signature = signature;
    button.dataset.status = status;
    button.dataset.chosen = String(chosen);
    if (justTaken) button.dataset.justTaken = 'true';
    else delete button.dataset.justTaken;
    button.disabled = status !== 'available';
    button.setAttribute('aria-pressed', String(chosen));
    const row = section.rows[state.layout.places.get(seatId).row].name;
    button.setAttribute('aria-label',
      `Seat ${seatId}, ${section.name}, row ${row}, ${money(section.price, section.currency, 'name')}, ${STATUS_WORDS[status]}`);
    button.querySelector('.seat-mark').textContent = chosen ? '✓' : status === 'taken' ? '✕' : '';
    button.title = `${seatId}: ${chosen ? 'your choice' : STATUS_WORDS[status]}`;
  }
}

function toggleSeat(seatId) {
  if (state.phase !== 'choosing') return;
  if (seatStatus(seatId) !== 'available') return;
  if (state.chosen.includes(seatId)) {
    state.chosen = state.chosen.filter((id) => id !== seatId);
  } else if (state.chosen.length >= MAX_SEATS) {
    notify(`You can hold at most ${MAX_SEATS} seats at once. Unselect a seat before choosing ${seatId}.`, 'error');
    return;
  } else {
    state.chosen = [...state.chosen, seatId];
  }
  updateSeatButtons();
  updateSelection();
}

function chosenTotal() {
  const sections = state.chosen.map((id) => state.layout?.sections[state.layout.places.get(id)?.section]).filter(Boolean);
  if (!sections.length || sections.length !== state.chosen.length) return null;
  const currency = sections[0].currency;
  if (sections.some((s) => s.currency !== currency)) return null;
  return money(sections.reduce((sum, s) => sum + s.price, 0), currency);
}

function updateSelection() {
  if (!state.chosen.length) {
    el.selection.textContent = 'No seats chosen yet.';
  } else {
    const total = chosenTotal();
    el.selection.textContent = `${plural(state.chosen.length, 'seat', 'seats')} chosen: ${listIds(state.chosen)}.${total ? ` Total ${total}.` : ''}`;
  }
  updateHoldButton();
}

function updateHoldButton() {
  if (state.phase === 'holding' && !state.bestAvailable) el.hold.textContent = 'Holding…';
  else el.hold.textContent = state.chosen.length ? `Hold ${plural(state.chosen.length, 'seat', 'seats')}` : 'Hold seats';
  // In the overview the exact hold is offered only for seats already chosen in a section.
  el.hold.hidden = el.seats.dataset.view !== 'section' && !state.chosen.length;
}

// ---------------------------------------------------------------------------------------------
// Holding: the seats chosen, or the best available together in a section

async function holdSeats() {
  if (state.phase !== 'choosing') return;
  if (!state.chosen.length) {
    notify('Choose at least one seat first.', 'error');
    return;
  }
  const r = await requestHold({ seatIds: [...state.chosen] });
  if (!r) return;
  if (r.status === 201 && r.data) {
    noteServerDate(r.date);
    state.chosen = [];
    showOrder(r.data);
    return;
  }
  holdRefused(r);
}

/** Asks the server for `quantity` seats side by side in one row of the section, the best it
 *  has (nearest the stage, then the row's centre). */
async function holdBestAvailable(sectionName) {
  if (state.phase !== 'choosing') return;
  const quantity = state.partySize;
  state.bestAvailable = { section: sectionName, quantity };
  let r;
  try {
    r = await requestHold({ section: sectionName, quantity });
  } finally {
    state.bestAvailable = null;
    updateOverview();
  }
  if (!r) return;
  if (r.status === 201 && r.data) {
    noteServerDate(r.date);
    state.chosen = []; // the server chose: choices made by hand are moot
    showOrder(r.data);
    return;
  }
  bestAvailableRefused(r, sectionName, quantity);
  // The button was disabled while asking, which took the keyboard focus away: give it back.
  if (document.activeElement === document.body || !document.activeElement) {
    el.overview.querySelector(`.best-available-button[data-section="${CSS.escape(sectionName)}"]`)?.focus();
  }
}

/** One hold request, repeated while the server is unreachable or busy (503, after its
 *  Retry-After). Resolves to the answer, or null when it gave up (the customer is told). */
async function requestHold(body) {
  setPhase('holding');
  for (let attempt = 1; ; attempt += 1) {
    let r;
    try {
      r = await api('POST', `/events/${enc(state.eventId)}/holds`, {
        body,
        headers: { 'X-Queue-Token': state.accessToken ?? '' },
      });
    } catch {
      if (attempt < 3) {
        notify(`${UNREACHABLE} retrying in 3 seconds.`, 'error');
        await sleep(3000);
        continue;
      }
      notify(`${UNREACHABLE} nothing was held. Try again.`, 'error');
      setPhase('choosing');
      return null;
    }
    if (r.status === 503 && attempt < 6) {
      // Safe to repeat: a hold that was written comes back as the same order (the same seats),
      // or as `hold_exists` naming it (best available), which is then shown.
      const s = r.retryAfter ?? 2;
      const code = problem(r).code;
      const why = code === 'availability_rebuilding' ? 'The seat map is being rebuilt'
        : code === 'queue_recovering' ? 'The queue is recovering from an outage (your admission is kept)'
          : 'The service is busy';
      notify(`${why}, retrying in ${plural(s, 'second', 'seconds')}…`, 'info');
      await sleep(withJitter(s));
      continue;
    }
    return r;
  }
}

/** Seats a refusal names as taken: shown taken for a while, even if the map lags. */
function markTaken(seatIds) {
  const until = Date.now() + JUST_TAKEN_MS;
  for (const id of seatIds) state.justTaken.set(id, until);
}

function bestAvailableRefused(r, section, quantity) {
  const p = problem(r);
  switch (p.code) {
    case 'no_seats_together':
      setPhase('choosing');
      notify(`No row of ${section} has ${plural(quantity, 'seat', 'seats')} together right now. Nothing was held. ` +
        `Ask for fewer seats, try another section, or choose seats yourself.`, 'error', { code: p.code });
      refreshSeats();
      return;
    case 'seats_unavailable':
      markTaken(p.seatIds);
      setPhase('choosing');
      notify(`The seats found for you in ${section} were taken by someone else meanwhile. Nothing was held; ` +
        'other seats may still be free together.', 'error', {
        code: p.code,
        action: { label: `Try again: ${plural(quantity, 'seat', 'seats')} in ${section}`, run: () => { setPartySize(quantity); holdBestAvailable(section); } },
      });
      updateSeatButtons();
      refreshSeats();
      return;
    case 'unknown_section':
      setPhase('choosing');
      notify(`${section} is not part of this event's seat map any more. The map is being reloaded; please choose again.`, 'error', { code: p.code });
      refreshSeats();
      return;
    default:
      holdRefused(r);
  }
}

function holdRefused(r) {
  const p = problem(r);
  switch (p.code) {
    case 'seats_unavailable': {
      // Nothing was held. The body names exactly the seats that are taken (error.seatIds).
      const taken = p.seatIds.length ? p.seatIds : [];
      markTaken(taken);
      state.chosen = state.chosen.filter((id) => !taken.includes(id));
      const kept = state.chosen;
      const takenText = taken.length
        ? `Sorry, ${taken.length === 1 ? 'seat' : 'seats'} ${listIds(taken)} ${taken.length === 1 ? 'was' : 'were'} just taken by someone else.`
        : 'Sorry, some of those seats were just taken by someone else.';
      const keptText = kept.length
        ? ` Nothing was held; your other ${kept.length === 1 ? 'choice' : 'choices'} (${listIds(kept)}) ${kept.length === 1 ? 'is' : 'are'} kept. Hold again when ready.`
        : ' Nothing was held. Please choose other seats.';
      setPhase('choosing');
      updateSeatButtons();
      updateSelection();
      notify(takenText + keptText, 'error', { code: 'seats_unavailable' });
      refreshSeats();
      return;
    }
    case 'price_changed':
      setPhase('choosing');
      notify(`${p.message} Check the prices and hold again.`, 'error');
      refreshSeats();
      return;
    case 'access_denied':
      endQueue('expired', 'Your turn has ended. Join the queue again to get a new place.', 'Join the queue again');
      notify(`${p.message}`, 'error');
      return;
    case 'hold_exists':
      // The answer names the open order: show it (its answer may have been lost, or it was
      // made in another tab), so it can be paid or released.
      setPhase('choosing');
      if (p.orderId) {
        recoverOrder(p.orderId, p.message);
        return;
      }
      notify(`${p.message} If you released them in another tab, wait a moment and try again.`, 'error');
      return;
    case 'ticket_limit_reached':
      setPhase('choosing');
      notify(`${p.message} Choose fewer seats, or none: you have all this event allows.`, 'error');
      return;
    default:
      setPhase('choosing');
      notify(p.message, 'error');
      if (p.code === 'unknown_seats') {
        state.chosen = state.chosen.filter((id) => !p.seatIds.includes(id));
        updateSelection();
        refreshSeats();
      }
  }
}

function showOrder(order, { announce = true } = {}) {
  state.order = order;
  state.warnedOneMinute = false;
  saveSession({ orderId: order.orderId });
  const seats = Array.isArray(order.seatIds) ? order.seatIds : [];
  el.orderDetails.replaceChildren(
    h('dt', {}, 'Seats'), h('dd', {}, h('ul', { class: 'seat-list' }, seats.map((id) => h('li', { dataset: { seatId: id } }, id)))),
    h('dt', {}, 'Total'), h('dd', { class: 'amount' }, money(order.amount, order.currency)),
    h('dt', {}, 'Order number'), h('dd', {}, h('code', { class: 'order-id' }, order.orderId)),
    h('dt', {}, 'Status'), h('dd', { id: 'order-status' }, 'Held, waiting for payment'),
  );
  el.order.dataset.orderId = order.orderId;
  el.pay.textContent = `Pay ${money(order.amount, order.currency)}`;
  if (el.status.dataset.status === 'admitted') setQueueStatus('admitted', 'It is your turn, and your seats are held: pay before the timer runs out.');
  el.orderState.textContent = '';
  setPhase('held');
  tickCountdown();
  if (announce) {
    notify(`${plural(seats.length, 'seat is', 'seats are')} held for you: ${listIds(seats)}. Pay before the timer runs out.`, 'success');
  }
  focusHeading(el.orderHeading);
}

function tickCountdown() {
  if (state.phase !== 'held' || !state.order) return;
  const left = Math.min(Date.parse(state.order.expiresAt) - serverNow(), state.holdSeconds * 1000);
  el.countdown.textContent = mmss(left);
  el.countdown.dataset.urgent = String(left <= 60000);
  if (left <= 0) {
    holdLapsed();
    return;
  }
  if (left <= 60000 && !state.warnedOneMinute) {
    state.warnedOneMinute = true;
    notify('Less than one minute left to pay for your seats.', 'info');
  }
  later('countdown', ((left - 1) % 1000) + 1, tickCountdown);
}

/** Shows the caller's open order named by a `hold_exists` refusal, if it is still held. */
async function recoverOrder(orderId, message) {
  try {
    const r = await api('GET', `/orders/${enc(orderId)}`);
    if (r.status === 200 && r.data && r.data.status === 'PENDING' && Date.parse(r.data.expiresAt) > serverNow()) {
      noteServerDate(r.date);
      showOrder(r.data, { announce: false });
      notify('You already hold these seats: pay for them or release them to choose others.', 'info');
      return;
    }
  } catch {
    /* fall through */
  }
  notify(`${message} If you released them in another tab, wait a moment and try again.`, 'error');
}

function holdLapsed() {
  const seats = state.order?.seatIds ?? [];
  state.order = null;
  saveSession({ orderId: null });
  el.countdown.textContent = '00:00';
  notify(`Your hold on ${listIds(seats)} lapsed before payment; the seats may go to someone else. Choose again.`, 'error');
  // Are we still admitted? Polling tells (and brings back the access token after a reload).
  if (state.queueId) {
    setPhase('choosing');
    pollQueue();
  } else {
    endQueue('idle', 'You are not in the queue.', 'Join the queue');
  }
}

async function releaseHold() {
  const order = state.order;
  if (!order) return;
  el.release.disabled = true;
  el.pay.disabled = true;
  try {
    const r = await api('DELETE', `/events/${enc(state.eventId)}/holds/${enc(order.orderId)}`);
    if (r.status === 204) {
      state.order = null;
      saveSession({ orderId: null });
      notify(`Released ${listIds(order.seatIds)}. The seats are free for others again.`, 'success');
      if (state.accessToken) enterSeats({ announce: false });
      else if (state.queueId) { setPhase('choosing'); pollQueue(); }
      else endQueue('idle', 'You are not in the queue.', 'Join the queue');
      return;
    }
    const p = problem(r);
    notify(p.message, 'error');
    if (p.code === 'order_not_pending' || r.status === 404) await checkOrderAfterRefusal(order);
  } catch {
    notify(`${UNREACHABLE} your seats are still held.`, 'error');
  } finally {
    el.release.disabled = state.phase === 'paying';
    el.pay.disabled = state.phase === 'paying';
  }
}

async function checkOrderAfterRefusal(order) {
  try {
    const r = await api('GET', `/orders/${enc(order.orderId)}`);
    if (r.status === 200 && r.data?.status === 'PAID') {
      setPhase('paid');
      waitForTicket();
    } else if (r.status === 200 && r.data?.status !== 'PENDING') {
      holdLapsed();
    }
  } catch {
    /* leave it as it is */
  }
}

// ---------------------------------------------------------------------------------------------
// Paying (the simulated provider) and the ticket

async function pay() {
  const order = state.order;
  if (!order || state.phase !== 'held') return;
  setPhase('paying');
  el.countdown.textContent = '--:--';
  el.orderState.textContent = 'Sending your payment…';
  let r;
  try {
    r = await api('POST', '/dev/payments', {
      body: { orderId: order.orderId, amount: order.amount, currency: order.currency },
    });
  } catch {
    setPhase('held');
    tickCountdown();
    el.orderState.textContent = '';
    notify(`${UNREACHABLE} you were not charged. Try again.`, 'error');
    return;
  }
  if (r.status !== 202 && r.status !== 200 && r.status !== 201) {
    setPhase('held');
    tickCountdown();
    el.orderState.textContent = '';
    notify(`The payment could not be started. ${problem(r).message}`, 'error');
    return;
  }
  el.orderState.textContent = 'Payment sent. Waiting for the payment provider to confirm…';
  notify('Payment sent; waiting for confirmation.', 'info');
  watchOrder(order, Date.now());
}

async function watchOrder(order, startedAt) {
  let delay = ORDER_POLL_MS;
  try {
    const r = await api('GET', `/orders/${enc(order.orderId)}`);
    if (r.status === 200 && r.data) {
      const status = r.data.status;
      const statusCell = document.getElementById('order-status');
      if (status === 'PAID') {
        if (statusCell) statusCell.textContent = 'Paid';
        state.order = r.data;
        forgetTicket(); // a paid order ends the admission
        state.accessToken = null;
        cancel('admission');
        setQueueStatus('done', 'You have finished: your order is paid.');
        setPhase('paid');
        notify('Payment confirmed! Your ticket is being issued.', 'success');
        focusHeading(el.ticketHeading);
        waitForTicket();
        return;
      }
      if (status === 'REFUND_REQUIRED') {
        saveSession({ orderId: null });
        forgetTicket();
        state.accessToken = null;
        cancel('admission');
        setQueueStatus('done', 'Your payment is being refunded.');
        el.ticketHeading.textContent = 'Refund on its way';
        setPhase('paid');
        el.ticketWait.textContent = 'Your payment arrived after your hold lapsed, and a seat had gone to someone else in the meantime. Nothing was sold, and your payment will be refunded in full.';
        el.again.hidden = false;
        notify('Your payment came too late for these seats. A refund is on its way.', 'error');
        focusHeading(el.ticketHeading);
        return;
      }
      if (statusCell) statusCell.textContent = `Payment processing (${status.toLowerCase()})`;
    } else if (r.status === 503) {
      delay = (r.retryAfter ?? 1) * 1000;
    } else {
      el.orderState.textContent = `Checking the order failed: ${problem(r).message} Still trying…`;
    }
  } catch {
    el.orderState.textContent = 'Cannot reach the server; still waiting for the payment confirmation…';
  }
  if (Date.now() - startedAt > 60000) {
    el.orderState.textContent = 'The payment is taking longer than usual. You will not be charged twice; still checking…';
    delay = Math.max(delay, 5000);
  }
  later('order', delay, () => watchOrder(order, startedAt));
}

async function waitForTicket(startedAt = Date.now()) {
  const order = state.order;
  if (!order) return;
  el.ticketWait.textContent = 'Issuing your ticket… this takes a few seconds.';
  let delay = TICKET_POLL_MS;
  try {
    const r = await api('GET', `/dev/tickets/${enc(order.orderId)}`);
    if (r.status === 200 && r.data?.ticket) {
      showTicket(r.data.ticket);
      return;
    }
    if (r.status === 503) delay = (r.retryAfter ?? 1) * 1000;
    else if (r.status !== 404) el.ticketWait.textContent = `Still issuing your ticket (${problem(r).message})`;
  } catch {
    el.ticketWait.textContent = 'Cannot reach the server; still waiting for your ticket…';
  }
  if (Date.now() - startedAt > 60000) {
    el.ticketWait.textContent = 'Your order is paid. The ticket is taking longer than usual to arrive; still checking…';
    delay = Math.max(delay, 5000);
  }
  later('ticket', delay, () => waitForTicket(startedAt));
}

function showTicket(ticket) {
  saveSession({ orderId: null });
  const seats = Array.isArray(ticket.seatIds) ? ticket.seatIds : [];
  const issued = new Date(ticket.occurredAt);
  el.ticket.dataset.orderId = ticket.orderId;
  el.ticket.replaceChildren(
    h('p', { class: 'ticket-kicker' }, h('span', { 'aria-hidden': 'true' }, '✓ '), 'Ticket issued'),
    h('p', { class: 'ticket-event' }, state.eventName || `Event ${ticket.eventId}`),
    h('dl', { class: 'details' },
      h('dt', {}, plural(seats.length, 'Seat', 'Seats').replace(/^\d+ /, '')),
      h('dd', {}, h('ul', { class: 'seat-list ticket-seats' }, seats.map((id) => h('li', { dataset: { seatId: id } }, id)))),
      h('dt', {}, 'Amount paid'), h('dd', { class: 'amount' }, money(ticket.amount, ticket.currency)),
      h('dt', {}, 'Name'), h('dd', {}, ticket.customerId),
      h('dt', {}, 'Order number'), h('dd', {}, h('code', { class: 'order-id' }, ticket.orderId)),
      h('dt', {}, 'Issued at'), h('dd', {}, h('time', { datetime: ticket.occurredAt },
        Number.isNaN(issued.getTime()) ? ticket.occurredAt : dateTimeFormat.format(issued))),
    ),
  );
  el.ticket.hidden = false;
  el.ticketWait.textContent = '';
  el.again.hidden = false;
  notify(`Your ticket is issued: ${listIds(seats)}. Enjoy the show!`, 'success');
}

function startOver() {
  state.order = null;
  state.queueId = null;
  state.number = null;
  state.entrant = null;
  state.chosen = [];
  state.view = { section: null, firstRow: 0 }; // a new turn starts from the sections
  el.seatmap.replaceChildren();
  showView();
  saveSession({ orderId: null });
  forgetTicket();
  el.ticket.hidden = true;
  el.again.hidden = true;
  el.ticketHeading.textContent = 'Your ticket';
  el.ticketWait.textContent = '';
  el.join.textContent = 'Join the queue';
  setQueueStatus('idle', 'You are not in the queue yet.');
  setPhase('idle');
  clearNotice();
  el.join.focus();
}

// ---------------------------------------------------------------------------------------------
// Wiring

function validateCustomer({ resumeSession = true } = {}) {
  const value = el.customer.value.trim();
  const ok = CUSTOMER_RE.test(value);
  el.customer.setAttribute('aria-invalid', String(!ok));
  if (!ok) {
    notify('Your name must be 1-128 letters, digits or symbols, without spaces.', 'error');
    return false;
  }
  if (value !== el.customer.value) el.customer.value = value;
  if (value !== state.customer) {
    setCustomer(value);
    state.queueId = null;
    state.number = null;
    state.entrant = null;
    if (resumeSession) resume();
  }
  return true;
}

el.customer.addEventListener('change', () => validateCustomer());
el.join.addEventListener('click', join);
el.leave.addEventListener('click', leave);
el.hold.addEventListener('click', holdSeats);
el.refresh.addEventListener('click', () => refreshSeats({ announce: true }));
el.back.addEventListener('click', showOverview);
el.rowsPrev.addEventListener('click', () => changeRows(state.view.firstRow - ROWS_PER_PAGE));
el.rowsNext.addEventListener('click', () => changeRows(state.view.firstRow + ROWS_PER_PAGE));
el.rowsPrevEnd.addEventListener('click', () => changeRows(state.view.firstRow - ROWS_PER_PAGE));
el.rowsNextEnd.addEventListener('click', () => changeRows(state.view.firstRow + ROWS_PER_PAGE));
el.rowsPage.addEventListener('change', () => changeRows(Number(el.rowsPage.value)));
el.release.addEventListener('click', releaseHold);
el.pay.addEventListener('click', pay);
el.again.addEventListener('click', startOver);
el.dismiss.addEventListener('click', () => {
  // The button disappears with the notice: put focus on the heading of what is showing.
  const active = [el.ticketSection, el.order, el.seats].find((section) => !section.hidden);
  clearNotice();
  (active?.querySelector('h2') ?? el.queueHeading).focus({ preventScroll: true });
});

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible') return;
  if (state.phase === 'waiting' && state.pollDeferred) {
    state.pollDeferred = false;
    readStatus();
  }
  if (state.phase === 'held') tickCountdown();
});

start();
