// The sections overview: one card per section with its price, what is left and a best-available
// hold; no seat buttons, however big the venue.

import { MAX_SEATS } from './config.js';
import { el, h } from './dom.js';
import { state } from './state.js';
import { money } from './format.js';
import { availabilityText, sectionAvailability, sectionByName } from './seats.js';
import { openSection } from './section.js';
import { closedToUs, describeSetAside } from './allocations.js';
import { holdBestAvailable } from './holds.js';

const rowSpan = (section) => (section.rows.length ? `rows ${section.rows[0].name}–${section.rows.at(-1).name}` : 'no rows');

export function buildOverview() {
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
      h('p', { class: 'section-set-aside', 'aria-live': 'polite' }),
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
export function setPartySize(n) {
  if (!Number.isInteger(n) || n < 1 || n > MAX_SEATS) return;
  state.partySize = n;
  for (const select of el.overview.querySelectorAll('select.quantity')) select.value = String(n);
}

export function updateOverview() {
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
    // A section set aside for a presale: for whom and until when; closed to everyone else.
    const closed = closedToUs(counts?.setAside, state.queueId);
    card.dataset.setAside = counts?.setAside ? (closed ? 'closed' : 'ours') : '';
    card.querySelector('.section-set-aside').textContent = describeSetAside(counts?.setAside, state.queueId);
    const busy = state.phase === 'holding' && state.bestAvailable?.section === name;
    button.disabled = state.phase === 'holding' || counts?.available === 0 || closed;
    button.setAttribute('aria-busy', String(busy));
    button.firstChild.textContent = busy ? 'Holding…' : 'Best available';
  }
}
