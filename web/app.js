// The entry module, the one index.html loads: it reads who and which event, wires the page's
// controls to the modules that handle them, and starts. (Native modules: no build step.)
//
// Lineup waiting room: join an event's queue, wait for your number to be called (reading the
// public status the CDN serves; a pre-queue number from the published draw), hold the best seats
// available in a section or choose seats in it, pay (through the local simulated payment
// provider) and see the issued ticket.

import { CUSTOMER_RE, ROWS_PER_PAGE } from './config.js';
import { el } from './dom.js';
import { state } from './state.js';
import { plural } from './format.js';
import { api } from './api.js';
import { clearNotice, notify } from './notice.js';
import { CUSTOMER_KEY } from './storage.js';
import { setPhase } from './phase.js';
import { randomCustomerId, resume, setCustomer, validateCustomer } from './customer.js';
import { join, leave } from './queue.js';
import { readStatus } from './status.js';
import { refreshSeats } from './seats.js';
import { changeRows, showOverview } from './section.js';
import { holdSeats } from './holds.js';
import { pay, releaseHold, tickCountdown } from './order.js';
import { startOver } from './ticket.js';

const params = new URLSearchParams(location.search);

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
