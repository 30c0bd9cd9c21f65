// The end of a purchase: waiting for the ticket to be issued, showing it, and starting over.

import { TICKET_POLL_MS } from './config.js';
import { el, h } from './dom.js';
import { state } from './state.js';
import { later } from './timers.js';
import { dateTimeFormat, listIds, money, plural } from './format.js';
import { api, enc, problem } from './api.js';
import { clearNotice, notify } from './notice.js';
import { forgetTicket, saveSession } from './storage.js';
import { setPhase, setQueueStatus } from './phase.js';
import { showView } from './section.js';

export async function waitForTicket(startedAt = Date.now()) {
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

export function startOver() {
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
