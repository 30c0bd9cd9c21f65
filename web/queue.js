// The queue: joining, the claim when the number is called, leaving, and showing where the
// customer stands (number, distance, ETA, or the pre-queue).
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

import { DEFAULT_POLL_S } from './config.js';
import { el, focusHeading } from './dom.js';
import { noteServerDate, serverNow, state } from './state.js';
import { cancel, later, withJitter } from './timers.js';
import { describeEta, plural, timeFormat } from './format.js';
import { api, enc, problem, RECOVERING, recovering, UNREACHABLE } from './api.js';
import { clearNotice, notify } from './notice.js';
import { forgetTicket, saveTicket } from './storage.js';
import { setPhase, setQueueStatus } from './phase.js';
import { validateCustomer } from './customer.js';
import { scheduleStatusRead } from './status.js';
import { enterSeats } from './seats.js';
import { CANNOT_SOLVE, isChallenge, solveChallenge } from './challenge.js';
import { askForCode, codeBody, isCodeProblem } from './access_code.js';
import { throughEdge } from './challenge.js'; // the edge's managed challenge (ADR 0028)

/** How many challenges in a row one join solves before giving up (a second one only comes when
 *  the first expired while solving, or the server's key rotated). */
const CHALLENGES_PER_JOIN = 3;

export async function join() {
  if (!validateCustomer({ resumeSession: false })) {
    el.customer.focus();
    return;
  }
  setPhase('joining');
  clearNotice();
  setQueueStatus('joining', 'Joining the queue…');
  let r;
  try {
    r = await throughEdge((headers) => api('POST', `/events/${enc(state.eventId)}/queue`, { body: codeBody(), headers }));
    // The event asks for a proof-of-work: solve the challenge the refusal carries, join again.
    for (let solved = 0; solved < CHALLENGES_PER_JOIN && isChallenge(problem(r)); solved++) {
      let proofOfWork;
      try {
        setQueueStatus('joining', 'Checking this browser before joining (about a second)…');
        proofOfWork = await solveChallenge(problem(r), (hashes) =>
          setQueueStatus('joining', `Checking this browser before joining… (${hashes.toLocaleString()} tries)`),
        );
      } catch {
        setQueueStatus('idle', 'You are not in the queue yet.');
        setPhase('idle');
        notify(CANNOT_SOLVE, 'error');
        return;
      }
      setQueueStatus('joining', 'Joining the queue…');
      r = await throughEdge((headers) =>
        api('POST', `/events/${enc(state.eventId)}/queue`, { body: { proofOfWork, ...codeBody() }, headers }),
      );
    }
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
  if (isCodeProblem(p)) {
    // The event is for holders of an access code: ask for it; "Join the queue" sends it.
    setQueueStatus('idle', 'You are not in the queue yet: this on-sale needs an access code.');
    setPhase('idle');
    askForCode(p);
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
      // A number just learnt: the status is read at once, for the ETA range and the chance of
      // a ticket it gives (web/status.js), not after Retry-After.
      const newNumber = Number.isInteger(standing.number) && state.number !== standing.number;
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
      scheduleStatusRead(newNumber ? 0 : retryAfter ?? DEFAULT_POLL_S);
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

export function learnNumber(number) {
  state.number = number;
  state.entrant = null;
  saveTicket({ number, entrant: null });
}

/** The number, where the queue is, the distance and the ETA. */
export function showPlace(number, servingUpTo, etaSeconds) {
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
export function showPreQueue({ opensAt, etaSeconds, drawPublished = false }) {
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

export function endQueue(status, text, joinLabel) {
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

/** Asks the server where we stand: the claim when our number is called, after a reload, or
 *  when the draw does not list us. */
export async function pollQueue() {
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

export async function leave() {
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
