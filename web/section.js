// One section's seats, a page of rows at a time, and choosing seats by hand (the selection and
// the Hold button).

import { MAX_SEATS, ROWS_PER_PAGE } from './config.js';
import { el, focusHeading, h } from './dom.js';
import { state } from './state.js';
import { listIds, money, plural } from './format.js';
import { notify } from './notice.js';
import { availabilityText, seatStatus, sectionAvailability, sectionByName } from './seats.js';

export function openSection(name) {
  if (!sectionByName(name)) return;
  state.view = { section: name, firstRow: 0 };
  buildSeatMap();
  showView();
  focusHeading(el.sectionHeading);
}

export function showOverview() {
  const from = state.view.section;
  state.view = { section: null, firstRow: 0 };
  el.seatmap.replaceChildren(); // no seat buttons are kept out of sight
  showView();
  const back = from && el.overview.querySelector(`.open-section[data-section="${CSS.escape(from)}"]`);
  requestAnimationFrame(() => (back ?? el.seatsHeading).focus());
}

/** Which of the two shows: the overview, or the open section. */
export function showView() {
  const open = state.view.section !== null && sectionByName(state.view.section) !== null;
  el.overview.hidden = open;
  el.sectionView.hidden = !open;
  el.seats.dataset.view = open ? 'section' : 'overview';
  updateHoldButton();
}

export function changeRows(firstRow) {
  const section = sectionByName(state.view.section);
  if (!section) return;
  const last = Math.max(0, section.rows.length - 1);
  state.view.firstRow = Math.min(Math.max(0, firstRow), last - (last % ROWS_PER_PAGE));
  buildSeatMap();
  // From the pager under the rows, the new rows start above: bring their top into view.
  if (el.rowsPager.getBoundingClientRect().top < 0) el.rowsPager.scrollIntoView({ block: 'start' });
  if (document.activeElement?.disabled) el.rowsPage.focus();
}

export function buildSeatMap() {
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

export function updateSeatButtons() {
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

export function updateSelection() {
  if (!state.chosen.length) {
    el.selection.textContent = 'No seats chosen yet.';
  } else {
    const total = chosenTotal();
    el.selection.textContent = `${plural(state.chosen.length, 'seat', 'seats')} chosen: ${listIds(state.chosen)}.${total ? ` Total ${total}.` : ''}`;
  }
  updateHoldButton();
}

export function updateHoldButton() {
  if (state.phase === 'holding' && !state.bestAvailable) el.hold.textContent = 'Holding…';
  else el.hold.textContent = state.chosen.length ? `Hold ${plural(state.chosen.length, 'seat', 'seats')}` : 'Hold seats';
  // In the overview the exact hold is offered only for seats already chosen in a section.
  el.hold.hidden = el.seats.dataset.view !== 'section' && !state.chosen.length;
}
