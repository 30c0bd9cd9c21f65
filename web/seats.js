// The seat map's data: the layout (fetched once per version), the availability bitsets (read
// every few seconds) and whether a seat is available; the views draw from these.
//
// Two public documents, both cacheable by the CDN (no name sent): the event's layout (sections,
// their prices, rows nearest the stage first, seats in order along each row), immutable and
// fetched once per version; and its availability, a bitset per section (bit i set: the
// section's seat i in layout order is available), read on every refresh. Held and sold seats
// are not told apart: both are "taken". The page shows the sections first, with a best-available
// hold in each; opening a section shows its seats, a page of rows at a time, so that even a
// stadium never turns into tens of thousands of buttons.

import { SEAT_REFRESH_MS } from './config.js';
import { el, focusHeading } from './dom.js';
import { state } from './state.js';
import { later, withJitter } from './timers.js';
import { listIds } from './format.js';
import { api, enc, problem } from './api.js';
import { notify } from './notice.js';
import { closedToUs, setAsideOf } from './allocations.js';
import { setPhase } from './phase.js';
import { buildOverview, updateOverview } from './overview.js';
import { buildSeatMap, showView, updateSeatButtons, updateSelection } from './section.js';

export function enterSeats({ announce = true } = {}) {
  const wasChoosing = state.phase === 'choosing' || state.phase === 'holding';
  setPhase('choosing');
  if (!wasChoosing) {
    if (announce) notify('You are in! Ask for the best seats available in a section, or open a section and choose up to 4 seats yourself.', 'success');
    focusHeading(el.seatsHeading);
  }
  refreshSeats();
}

export function scheduleSeatRefresh(ms = SEAT_REFRESH_MS) {
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
export async function refreshSeats({ announce = false } = {}) {
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
    return { seats: Number(s.seats) || section.seats, available: Number(s.available) || 0, bits, setAside: setAsideOf(s) };
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
export function seatStatus(seatId) {
  const place = state.layout?.places.get(seatId);
  const bits = place && state.availability?.[place.section]?.bits;
  if (!bits) return 'taken';
  // Set aside for a presale the customer is not in: not theirs to hold until its window ends.
  if (closedToUs(state.availability[place.section].setAside, state.queueId)) return 'taken';
  const until = state.justTaken.get(seatId);
  if (until !== undefined) {
    if (until > Date.now()) return 'taken';
    state.justTaken.delete(seatId);
  }
  return (bits[place.index >> 3] ?? 0) & (0x80 >> (place.index & 7)) ? 'available' : 'taken';
}

export const sectionByName = (name) => state.layout?.sections.find((s) => s.name === name) ?? null;
export const sectionAvailability = (name) => state.availability?.[state.layout.sections.findIndex((s) => s.name === name)] ?? null;

export function availabilityText(available, total) {
  return available === 0
    ? `Sold out or held (${total.toLocaleString()} seats).`
    : `${available.toLocaleString()} of ${total.toLocaleString()} seats available.`;
}
