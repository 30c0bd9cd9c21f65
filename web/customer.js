// Who the customer is (the "Your name" field), and picking up what that customer had open after
// a reload or a change of name.

import { CUSTOMER_RE } from './config.js';
import { el } from './dom.js';
import { noteServerDate, serverNow, state } from './state.js';
import { api, enc } from './api.js';
import { notify } from './notice.js';
import { CUSTOMER_KEY, loadSession, loadTicket, saveSession } from './storage.js';
import { setPhase, setQueueStatus } from './phase.js';
import { pollQueue } from './queue.js';
import { showOrder } from './order.js';
import { waitForTicket } from './ticket.js';

export function randomCustomerId() {
  const bytes = crypto.getRandomValues(new Uint8Array(3));
  return `fan-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export function setCustomer(customer) {
  state.customer = customer;
  try { sessionStorage.setItem(CUSTOMER_KEY, customer); } catch { /* ignore */ }
}

/** After a reload: pick up an open order (this tab) or the queue ticket (this browser) of this
 *  customer. A held ticket is polled with, never joined again: the place is kept either way. */
export async function resume() {
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

export function validateCustomer({ resumeSession = true } = {}) {
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
