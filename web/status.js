// Waiting without asking the server: reading the public status the CDN serves, ever less often
// the further back the number, and finding a pre-queue number in the published draw.
//
// No cadence is shared by the crowd (as shared/src/domain/wait_policy.rs): each read this page
// schedules itself comes at a random moment within ±20 % of the policy's interval; before
// opening, the pre-queue reads once just after the opening, at a moment of its own within 10 s
// (or, for a pre-queue too big for that, within the `openingReadSpreadSeconds` that start
// `openingReadDelaySeconds` after it), not every 5 s through the last minute; and once the draw is
// published, the chunk is fetched at
// a moment of its own within the status's `chunkFetchWindowSeconds`. A status or chunk read that
// fails (429, 5xx, no answer) is retried with exponential backoff and jitter, never replaced by a
// poll of the origin: only a chunk that does not list us sends us to the server.

import { describeLines, issuedAt, lineId } from './lines.js';
import { DEFAULT_POLL_S, MAX_STATUS_READ_S } from './config.js';
import { el } from './dom.js';
import { describeEta } from './format.js';
import { serverNow, state } from './state.js';
import { later, withJitter } from './timers.js';
import { enc, RECOVERING, UNREACHABLE } from './api.js';
import { clearNotice, notify } from './notice.js';
import { setPhase } from './phase.js';
import { endQueue, learnNumber, pollQueue, showPlace, showPreQueue } from './queue.js';

// The read policy's numbers, as wait_policy.rs has them (tests/page_read_policy.rs checks).
export const READ_JITTER = 0.2; // STATUS_READ_JITTER: each read within ±20 % of its interval
export const OPENING_READ_SPREAD_S = 10; // OPENING_READ_SPREAD: the pre-queue's read after opening
export const MIN_PRE_QUEUE_READ_S = 60; // MIN_PRE_QUEUE_INTERVAL: before opening, at most once a minute
export const CHUNK_FETCH_SHARE_OF_CLAIM_WINDOW = 3; // without chunkFetchWindowSeconds: a third
export const MAX_CHUNK_FETCH_WINDOW_S = 30; // ... and at most this
export const MAX_OPENING_READ_SPREAD_S = 900; // MAX_OPENING_READ_SPREAD: a paced opening's longest
// A failed status or chunk read is tried again after 1–2 s, then 2–4 s, 4–8 s... at most 30–60 s
// (half the doubling ceiling plus a random half of it), and never sooner than its Retry-After.
export const BACKOFF_FIRST_S = 2;
export const BACKOFF_MAX_S = 60;
// The honest ETA and the chance of a ticket, as shared/src/domain/wait_forecast.rs has them.
export const ETA_RANGE_SHARE = 0.25; // ETA_RANGE_SHARE: the range, slots held a quarter shorter/longer
export const SOLD_OUT_MARGIN = 1.2; // SOLD_OUT_MARGIN: demand ahead ≥ 1.2 × the seats left
export const FORECAST_STEPS = 480; // FORECAST_STEPS: the forecast of the slots, over two sessions
export const CALL_SEEN_AFTER_S = 2.5; // CALL_SEEN_AFTER: a call is seen at the next read, ~2.5 s on

/** The status is read again after a server-given `seconds` (`Retry-After`: up to 20 % added,
 *  as the contract asks); once the page is visible again if it is hidden then. */
export function scheduleStatusRead(seconds) {
  scheduleStatusReadIn(withJitter(seconds));
}

function scheduleStatusReadIn(ms) {
  later('poll', ms, () => {
    if (document.visibilityState === 'hidden') {
      state.pollDeferred = true;
      return;
    }
    readStatus();
  });
}

/** `seconds` moved to a random moment within ±20 % of it, in ms (as `wait_policy::jittered`). */
export function jitteredMs(seconds) {
  return seconds * (1 - READ_JITTER + 2 * READ_JITTER * Math.random()) * 1000;
}

/** When a pre-queue entrant reads next, `untilOpening` seconds before the opening, in ms (as
 *  `wait_policy::next_pre_queue_read`): the jittered tenth of it, at least a minute, while that
 *  read comes before the opening; otherwise once after it, at a random moment within the
 *  opening's spread (`openingReads`: 10 s from the opening unless the status paces it). */
export function preQueueReadMs(untilOpening, reads = openingReads({})) {
  const readMs = jitteredMs(Math.max(nextRead(untilOpening), MIN_PRE_QUEUE_READ_S));
  if (readMs < untilOpening * 1000) return readMs;
  return (Math.max(0, untilOpening) + reads.delay + Math.random() * reads.spread) * 1000;
}

/** How the pre-queue reads after the opening, as the status says (as
 *  `EventStatus::opening_reads`): `openingReadSpreadSeconds` from `openingReadDelaySeconds` after
 *  it for a big pre-queue, else within 10 s of it. */
export function openingReads(status) {
  const delay = Number(status.openingReadDelaySeconds);
  const spread = Number(status.openingReadSpreadSeconds);
  if (Number.isFinite(delay) && delay >= 0 && Number.isFinite(spread) && spread > 0) {
    return { delay, spread: Math.min(spread, MAX_OPENING_READ_SPREAD_S) };
  }
  return { delay: 0, spread: OPENING_READ_SPREAD_S };
}

/** How long to wait before trying a failed read again, after `failures` failures before this
 *  one: exponential backoff with jitter, and never sooner than `retryAfter` seconds (plus up to
 *  20 %) when the answer said so. */
export function backoffMs(failures, retryAfter) {
  const ceiling = Math.min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** Math.min(failures, 10));
  const wait = ceiling / 2 + Math.random() * (ceiling / 2);
  const floor = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * (1 + Math.random() * 0.2) : 0;
  return Math.max(wait, floor) * 1000;
}

/** `Retry-After` in seconds, if the answer has a usable one. */
function retryAfterOf(response) {
  const seconds = Number(response.headers.get('Retry-After'));
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

// Consecutive failed status reads, and chunk reads (each set back to 0 by a good answer).
let statusFailures = 0;
let chunkFailures = 0;

const positive = (value, fallback) => {
  const number = Number(value);
  return Number.isFinite(number) && number > 0 ? number : fallback;
};

/** The pace's forecast of the slots (as `AdmissionPace::slot_forecast`), or null if the status
 *  has not all of it. */
function slotForecast(pace) {
  const session = positive(pace.sessionSeconds, 0);
  const quick = positive(pace.quickSlotSeconds, 0);
  const share = Number(pace.heldToTheEndShare);
  const held = pace.heldToDeadline;
  if (!(session > 0 && quick > 0) || !Number.isFinite(share) || !Array.isArray(held)) return null;
  const pairs = held.filter((pair) => Array.isArray(pair) && pair.length === 2)
    .map(([seconds, slots]) => [Number(seconds) || 0, Number(slots) || 0]);
  return { session, quick, heldShare: Math.min(1, Math.max(0, share)), held: pairs };
}

/** Seconds until `admissions` more are admitted, by the forecast of the slots (as
 *  `AdmissionPace::foreseen_seconds`, the same arithmetic step by step): over two sessions, the
 *  slots held to their deadline free then, the quick holders each step the step's share of
 *  their slot time (× `quickShare`); freed slots are filled at the rate, the share held to the
 *  end of those admitted to hold theirs a session. Past the horizon, the pace the cap sustains. */
export function foreseenSeconds(pace, admissions, forecast, quickShare) {
  const rate = positive(pace.admitsPerSecond, 1);
  const quick = forecast.quick * quickShare;
  const horizon = 2 * forecast.session;
  const step = horizon / FORECAST_STEPS;
  const ending = new Array(FORECAST_STEPS).fill(0);
  let known = 0;
  for (const [seconds, slots] of forecast.held) {
    const at = Math.floor(Math.max(seconds, 0) / step);
    if (at < FORECAST_STEPS) ending[at] += slots;
    known += slots;
  }
  let quickHeld = Math.max((Number(pace.slotsInUse) || 0) - known, 0);
  let free = Math.max(0, Number(pace.slotsFree) || 0);
  const leave = Math.min(step / quick, 1);
  const sessionSteps = FORECAST_STEPS / 2;
  let admitted = 0;
  for (let i = 0; i < FORECAST_STEPS; i++) {
    const left = quickHeld * leave;
    quickHeld -= left;
    free += left + ending[i];
    const admit = Math.min(free, rate * step);
    if (admit > 0 && admitted + admit >= admissions) return i * step + step * (admissions - admitted) / admit;
    admitted += admit;
    free -= admit;
    quickHeld += (1 - forecast.heldShare) * admit;
    if (i + sessionSteps < FORECAST_STEPS) ending[i + sessionSteps] += forecast.heldShare * admit;
  }
  const slot = forecast.heldShare * forecast.session + (1 - forecast.heldShare) * quick;
  const sustained = Math.min(rate, (Number(pace.maxActive) || 0) / slot);
  return horizon + (admissions - admitted) / positive(sustained, rate);
}

/** Seconds until `number` is seen called, `{ earliest, likely, latest }` (as
 *  `EventStatus::eta_range_at`): with the status's `pace`, the admissions it takes (the distance
 *  ÷ `numbersPerAdmission`), by the forecast of the slots if the pace has one
 *  (`foreseenSeconds`), else the first `slotsFree` of them at `admitsPerSecond` and the rest as
 *  the active cap frees slots (`maxActive ÷ slotSeconds` a second), plus the 2.5 s a call takes
 *  to be seen; the range with the (quick) slot time a quarter shorter and longer. Without a
 *  pace, the distance at `advancePerSecond`. After a paced opening's first call while that is
 *  still to come. */
export function etaRange(status, number, now = serverNow()) {
  const distance = Math.max(0, number - (Number(status.servingUpTo) || 0));
  if (distance === 0) return { earliest: 0, likely: 0, latest: 0 };
  const pace = status.pace && typeof status.pace === 'object' ? status.pace : null;
  let range;
  if (pace) {
    const admissions = distance / positive(pace.numbersPerAdmission, 1);
    const rate = positive(pace.admitsPerSecond, 1);
    const slot = Number(pace.slotSeconds);
    const free = Math.max(0, Number(pace.slotsFree) || 0);
    const forecast = slotForecast(pace);
    const at = forecast
      ? (share) => foreseenSeconds(pace, admissions, forecast, share) + CALL_SEEN_AFTER_S
      : (share) => {
        const sustained = Number.isFinite(slot) && slot > 0
          ? Math.min(rate, (Number(pace.maxActive) || 0) / (slot * share))
          : positive(pace.sustainedAdmitsPerSecond, rate);
        const intoFree = Math.min(admissions, free);
        return intoFree / rate + (admissions - intoFree) / positive(sustained, rate) + CALL_SEEN_AFTER_S;
      };
    range = { earliest: at(1 - ETA_RANGE_SHARE), likely: at(1), latest: at(1 + ETA_RANGE_SHARE) };
  } else {
    const eta = distance / positive(status.advancePerSecond, 1);
    range = { earliest: eta, likely: eta, latest: eta };
  }
  const firstCall = Date.parse(status.firstCallAt);
  const untilFirstCall = Number.isFinite(firstCall) ? Math.max(0, (firstCall - now) / 1000) : 0;
  return {
    earliest: untilFirstCall + range.earliest,
    likely: untilFirstCall + range.likely,
    latest: untilFirstCall + range.latest,
  };
}

/** Whether the sale will very likely be sold out before `number`'s turn (as
 *  `EventStatus::likely_sold_out`): those ahead (the distance ÷ `numbersPerAdmission`) and those
 *  holding slots now, at `seatsPerAdmission`, should buy at least 1.2 × `seatsLeft`. */
export function likelySoldOut(status, number) {
  const distance = Math.max(0, number - (Number(status.servingUpTo) || 0));
  const pace = status.pace && typeof status.pace === 'object' ? status.pace : null;
  const seatsLeft = Number(status.seatsLeft);
  const perAdmission = Number(pace?.seatsPerAdmission);
  if (!pace || distance === 0 || !Number.isFinite(seatsLeft) || !Number.isFinite(perAdmission)) return false;
  const ahead = distance / positive(pace.numbersPerAdmission, 1);
  const demand = (ahead + (Number(pace.slotsInUse) || 0)) * perAdmission;
  return demand >= seatsLeft * SOLD_OUT_MARGIN;
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
  const issued = issuedAt(state.queueId); // [<group>.]<number>.<issued ms>.<mac>
  const restored = Date.parse(restoredAt);
  return !(Number.isFinite(issued) && Number.isFinite(restored)) || issued < restored;
}

/** One read of the public status (through the CDN; no name sent), and what it means for us. */
export async function readStatus() {
  if (state.phase !== 'waiting' || !state.queueId) return;
  let status;
  try {
    const line = lineId(state.eventId, state.queueId); // the event's, or our presale group's
    const response = await fetch(`/events/${enc(line)}/status`, { headers: { Accept: 'application/json' } });
    if (response.status !== 200) {
      // 429 (the WAF's per-IP limit, API Gateway's throttle), 5xx, a 404 while the event is
      // being set up: the same status again, later and later.
      if (response.status === 503) {
        const data = await response.json().catch(() => null);
        if (data?.error?.code === 'queue_recovering') notify(RECOVERING, 'info', { code: 'queue_recovering' });
      }
      scheduleStatusReadIn(backoffMs(statusFailures++, retryAfterOf(response)));
      return;
    }
    status = await response.json();
  } catch {
    const delay = backoffMs(statusFailures++);
    notify(`${UNREACHABLE} trying again in ${Math.ceil(delay / 1000)} seconds.`, 'error');
    scheduleStatusReadIn(delay);
    return;
  }
  statusFailures = 0;
  if (state.phase !== 'waiting') return;
  el.line.textContent = describeLines(status, state.queueId);
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
    const eta = etaRange(status, number);
    showPlace(number, Number(status.servingUpTo) || 0, eta.likely);
    if (Math.round(eta.latest / 60) > Math.round(eta.earliest / 60)) {
      el.eta.textContent += ` Most likely between ${describeEta(eta.earliest).replace(/^about /, '')} and ` +
        `${describeEta(eta.latest).replace(/^about /, '')}.`;
    }
    if (likelySoldOut(status, number)) {
      el.eta.dataset.likelySoldOut = 'true';
      el.eta.textContent += ' Likely sold out before your turn: at the pace seats are selling, those ahead ' +
        'of you should buy the seats left. You can keep your place in case seats come back.';
    } else {
      delete el.eta.dataset.likelySoldOut;
    }
    // A tenth of the earliest it may come (as `EventStatus::next_read`): a queue going faster
    // than told is noticed, and the call claimed soon.
    scheduleStatusReadIn(jitteredMs(nextRead(eta.earliest)));
    return;
  }
  const prefixLength = Number(status.draw?.prefixLength);
  if (status.draw?.published && Number.isInteger(prefixLength) && state.entrant) {
    showPreQueue({ drawPublished: true });
    // The pre-queue's fetches spread over the window the status gives (short enough that the
    // first numbers called are claimed in time), not all in the first seconds.
    later('poll', Math.random() * chunkFetchWindow(status) * 1000, () => findNumber(prefixLength));
    return;
  }
  const untilOpening = Math.max(0, (Date.parse(status.opensAt) - serverNow()) / 1000) || 0;
  showPreQueue({ opensAt: status.opensAt, etaSeconds: untilOpening });
  // Before opening: the pre-queue's own reads; after it (the draw about to be published): 5 s.
  scheduleStatusReadIn(
    status.state === 'pre_queue' ? preQueueReadMs(untilOpening, openingReads(status)) : jitteredMs(DEFAULT_POLL_S),
  );
}

/** The seconds within which to fetch our chunk, as the status says (`chunkFetchWindowSeconds`),
 *  else a third of the claim window, at most 30 s (as `wait_policy::chunk_fetch_window`). */
function chunkFetchWindow(status) {
  const given = Number(status.chunkFetchWindowSeconds);
  if (Number.isFinite(given) && given >= 0) return Math.min(given, MAX_CHUNK_FETCH_WINDOW_S);
  const claim = Number(status.claimWindowSeconds) || 60;
  return Math.min(MAX_CHUNK_FETCH_WINDOW_S, claim / CHUNK_FETCH_SHARE_OF_CLAIM_WINDOW);
}

/** Our number in the published draw: the chunk of entrants sharing our hash's first digits.
 *  Only a chunk that does not list us (we left before the draw) sends us to the server; a chunk
 *  that could not be read (429, 5xx, no answer, not JSON) is read again after a backoff. */
async function findNumber(prefixLength) {
  const entrant = state.entrant;
  if (state.phase !== 'waiting' || !entrant) return;
  let chunk;
  try {
    const response = await fetch(`/events/${enc(lineId(state.eventId, state.queueId))}/draw/${enc(entrant.slice(0, prefixLength))}`,
      { headers: { Accept: 'application/json' } });
    if (response.status !== 200) {
      retryChunk(prefixLength, retryAfterOf(response));
      return;
    }
    chunk = await response.json();
  } catch {
    retryChunk(prefixLength);
    return;
  }
  if (!Array.isArray(chunk?.entries)) {
    retryChunk(prefixLength);
    return;
  }
  chunkFailures = 0;
  const entry = chunk.entries.find((e) => Array.isArray(e) && e[0] === entrant);
  if (!entry || !Number.isInteger(entry[1])) {
    pollQueue(); // the draw does not list us: the server says where we stand
    return;
  }
  learnNumber(entry[1]);
  notify(`The draw is published: your number is ${entry[1].toLocaleString()}.`, 'info');
  readStatus(); // where the queue is now
}

function retryChunk(prefixLength, retryAfter) {
  later('poll', backoffMs(chunkFailures++, retryAfter), () => findNumber(prefixLength));
}
