// Waiting without asking the server: reading the public status the CDN serves, ever less often
// the further back the number, and finding a pre-queue number in the published draw.

import { CHUNK_FETCH_SPREAD_S, DEFAULT_POLL_S, MAX_STATUS_READ_S } from './config.js';
import { el } from './dom.js';
import { serverNow, state } from './state.js';
import { later, withJitter } from './timers.js';
import { enc, RECOVERING, UNREACHABLE } from './api.js';
import { clearNotice, notify } from './notice.js';
import { setPhase } from './phase.js';
import { endQueue, learnNumber, pollQueue, showPlace, showPreQueue } from './queue.js';

/** The status is read again after `seconds` (a small jitter added, so a crowd does not read in
 *  lockstep); once the page is visible again if it is hidden then. */
export function scheduleStatusRead(seconds) {
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

const saleOver = (status) => ['closed', 'sold_out', 'cancelled'].includes(status.state);

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
export async function readStatus() {
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
  if (status.state === 'cancelled') {
    endQueue('closed', 'This event is cancelled. Every payment is refunded in full.', 'Join the queue');
    setPhase('closed');
    notify('This event is cancelled. If you paid, your payment is being refunded.', 'error');
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
