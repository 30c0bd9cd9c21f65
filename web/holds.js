// Asking for a hold, of the seats chosen or of the best available together in a section, and
// what each refusal means for the page.

import { JUST_TAKEN_MS } from './config.js';
import { el } from './dom.js';
import { noteServerDate, state } from './state.js';
import { sleep, withJitter } from './timers.js';
import { listIds, plural } from './format.js';
import { api, enc, problem, UNREACHABLE } from './api.js';
import { notify } from './notice.js';
import { setPhase } from './phase.js';
import { endQueue } from './queue.js';
import { refreshSeats } from './seats.js';
import { setPartySize, updateOverview } from './overview.js';
import { updateSeatButtons, updateSelection } from './section.js';
import { recoverOrder, showOrder } from './order.js';

export async function holdSeats() {
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
export async function holdBestAvailable(sectionName) {
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
    case 'seats_reserved':
      setPhase('choosing');
      notify(`The seats of ${section} are set aside for a presale you are not in, until its window ends. Nothing was held; ` +
        'try another section.', 'error', { code: p.code });
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
    case 'seats_reserved': {
      // Set aside for a presale the customer is not in (the seat map says until when).
      const reserved = p.seatIds.length ? p.seatIds : [];
      markTaken(reserved);
      state.chosen = state.chosen.filter((id) => !reserved.includes(id));
      setPhase('choosing');
      updateSeatButtons();
      updateSelection();
      notify(`${reserved.length === 1 ? 'Seat' : 'Seats'} ${listIds(reserved)} ${reserved.length === 1 ? 'is' : 'are'} set aside for a presale you are not in, until its window ends. Nothing was held; please choose other seats.`,
        'error', { code: 'seats_reserved' });
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
