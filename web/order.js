// The held order: its countdown, releasing it, and paying it through the simulated provider
// until the payment is confirmed.

import { ORDER_POLL_MS } from './config.js';
import { el, focusHeading, h } from './dom.js';
import { noteServerDate, serverNow, state } from './state.js';
import { cancel, later } from './timers.js';
import { listIds, mmss, money, plural } from './format.js';
import { api, enc, problem, UNREACHABLE } from './api.js';
import { notify } from './notice.js';
import { forgetTicket, saveSession } from './storage.js';
import { setPhase, setQueueStatus } from './phase.js';
import { endQueue, pollQueue } from './queue.js';
import { enterSeats } from './seats.js';
import { waitForTicket } from './ticket.js';

export function showOrder(order, { announce = true } = {}) {
  state.order = order;
  state.warnedOneMinute = false;
  saveSession({ orderId: order.orderId });
  const seats = Array.isArray(order.seatIds) ? order.seatIds : [];
  el.orderDetails.replaceChildren(
    h('dt', {}, 'Seats'), h('dd', {}, h('ul', { class: 'seat-list' }, seats.map((id) => h('li', { dataset: { seatId: id } }, id)))),
    h('dt', {}, 'Total'), h('dd', { class: 'amount' }, money(order.amount, order.currency)),
    h('dt', {}, 'Order number'), h('dd', {}, h('code', { class: 'order-id' }, order.orderId)),
    h('dt', {}, 'Status'), h('dd', { id: 'order-status' }, 'Held, waiting for payment'),
  );
  el.order.dataset.orderId = order.orderId;
  el.pay.textContent = `Pay ${money(order.amount, order.currency)}`;
  if (el.status.dataset.status === 'admitted') setQueueStatus('admitted', 'It is your turn, and your seats are held: pay before the timer runs out.');
  el.orderState.textContent = '';
  setPhase('held');
  tickCountdown();
  if (announce) {
    notify(`${plural(seats.length, 'seat is', 'seats are')} held for you: ${listIds(seats)}. Pay before the timer runs out.`, 'success');
  }
  focusHeading(el.orderHeading);
}

export function tickCountdown() {
  if (state.phase !== 'held' || !state.order) return;
  const left = Math.min(Date.parse(state.order.expiresAt) - serverNow(), state.holdSeconds * 1000);
  el.countdown.textContent = mmss(left);
  el.countdown.dataset.urgent = String(left <= 60000);
  if (left <= 0) {
    holdLapsed();
    return;
  }
  if (left <= 60000 && !state.warnedOneMinute) {
    state.warnedOneMinute = true;
    notify('Less than one minute left to pay for your seats.', 'info');
  }
  later('countdown', ((left - 1) % 1000) + 1, tickCountdown);
}

/** Shows the caller's open order named by a `hold_exists` refusal, if it is still held. */
export async function recoverOrder(orderId, message) {
  try {
    const r = await api('GET', `/orders/${enc(orderId)}`);
    if (r.status === 200 && r.data && r.data.status === 'PENDING' && Date.parse(r.data.expiresAt) > serverNow()) {
      noteServerDate(r.date);
      showOrder(r.data, { announce: false });
      notify('You already hold these seats: pay for them or release them to choose others.', 'info');
      return;
    }
  } catch {
    /* fall through */
  }
  notify(`${message} If you released them in another tab, wait a moment and try again.`, 'error');
}

function holdLapsed() {
  const seats = state.order?.seatIds ?? [];
  state.order = null;
  saveSession({ orderId: null });
  el.countdown.textContent = '00:00';
  notify(`Your hold on ${listIds(seats)} lapsed before payment; the seats may go to someone else. Choose again.`, 'error');
  // Are we still admitted? Polling tells (and brings back the access token after a reload).
  if (state.queueId) {
    setPhase('choosing');
    pollQueue();
  } else {
    endQueue('idle', 'You are not in the queue.', 'Join the queue');
  }
}

export async function releaseHold() {
  const order = state.order;
  if (!order) return;
  el.release.disabled = true;
  el.pay.disabled = true;
  try {
    const r = await api('DELETE', `/events/${enc(state.eventId)}/holds/${enc(order.orderId)}`);
    if (r.status === 204) {
      state.order = null;
      saveSession({ orderId: null });
      notify(`Released ${listIds(order.seatIds)}. The seats are free for others again.`, 'success');
      if (state.accessToken) enterSeats({ announce: false });
      else if (state.queueId) { setPhase('choosing'); pollQueue(); }
      else endQueue('idle', 'You are not in the queue.', 'Join the queue');
      return;
    }
    const p = problem(r);
    notify(p.message, 'error');
    if (p.code === 'order_not_pending' || r.status === 404) await checkOrderAfterRefusal(order);
  } catch {
    notify(`${UNREACHABLE} your seats are still held.`, 'error');
  } finally {
    el.release.disabled = state.phase === 'paying';
    el.pay.disabled = state.phase === 'paying';
  }
}

async function checkOrderAfterRefusal(order) {
  try {
    const r = await api('GET', `/orders/${enc(order.orderId)}`);
    if (r.status === 200 && r.data?.status === 'PAID') {
      setPhase('paid');
      waitForTicket();
    } else if (r.status === 200 && r.data?.status !== 'PENDING') {
      holdLapsed();
    }
  } catch {
    /* leave it as it is */
  }
}

export async function pay() {
  const order = state.order;
  if (!order || state.phase !== 'held') return;
  setPhase('paying');
  el.countdown.textContent = '--:--';
  el.orderState.textContent = 'Sending your payment…';
  let r;
  try {
    // The order's payment, made by the server for the amount it decided (one per order,
    // whatever the retries).
    r = await api('POST', `/orders/${enc(order.orderId)}/payment`);
    if (r.status === 200 && r.data?.paymentId) {
      // Paid as Stripe.js pays it: confirmed at the provider with the publishable key and the
      // client secret. (Locally `lineup dev`'s provider answers on the same origin; with real
      // Stripe this is `stripe.confirmPayment` from js.stripe.com.)
      r = await confirmAtProvider(r.data);
    }
  } catch {
    setPhase('held');
    tickCountdown();
    el.orderState.textContent = '';
    notify(`${UNREACHABLE} you were not charged. Try again.`, 'error');
    return;
  }
  if (r.status !== 200) {
    setPhase('held');
    tickCountdown();
    el.orderState.textContent = '';
    notify(`The payment could not be made. ${problem(r).message}`, 'error');
    return;
  }
  el.orderState.textContent = 'Payment sent. Waiting for the payment provider to confirm…';
  notify('Payment sent; waiting for confirmation.', 'info');
  watchOrder(order, Date.now());
}

/** Confirms a payment at the provider, as Stripe.js does (form-encoded, publishable key). */
async function confirmAtProvider(payment) {
  const form = new URLSearchParams({ payment_method: 'pm_card_visa' });
  if (payment.clientSecret) form.set('client_secret', payment.clientSecret);
  let response;
  try {
    response = await fetch(`/v1/payment_intents/${enc(payment.paymentId)}/confirm`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${payment.publishableKey ?? ''}`,
        'Content-Type': 'application/x-www-form-urlencoded',
      },
      body: form.toString(),
    });
  } catch (error) {
    throw new Error(error?.message ?? 'network error');
  }
  const data = await response.json().catch(() => null);
  return { status: response.status, data };
}

async function watchOrder(order, startedAt) {
  let delay = ORDER_POLL_MS;
  try {
    const r = await api('GET', `/orders/${enc(order.orderId)}`);
    if (r.status === 200 && r.data) {
      const status = r.data.status;
      const statusCell = document.getElementById('order-status');
      if (status === 'PAID') {
        if (statusCell) statusCell.textContent = 'Paid';
        state.order = r.data;
        forgetTicket(); // a paid order ends the admission
        state.accessToken = null;
        cancel('admission');
        setQueueStatus('done', 'You have finished: your order is paid.');
        setPhase('paid');
        notify('Payment confirmed! Your ticket is being issued.', 'success');
        focusHeading(el.ticketHeading);
        waitForTicket();
        return;
      }
      if (status === 'REFUND_REQUIRED') {
        saveSession({ orderId: null });
        forgetTicket();
        state.accessToken = null;
        cancel('admission');
        setQueueStatus('done', 'Your payment is being refunded.');
        el.ticketHeading.textContent = 'Refund on its way';
        setPhase('paid');
        el.ticketWait.textContent = 'Your payment arrived after your hold lapsed, and a seat had gone to someone else in the meantime. Nothing was sold, and your payment will be refunded in full.';
        el.again.hidden = false;
        notify('Your payment came too late for these seats. A refund is on its way.', 'error');
        focusHeading(el.ticketHeading);
        return;
      }
      if (statusCell) statusCell.textContent = `Payment processing (${status.toLowerCase()})`;
    } else if (r.status === 503) {
      delay = (r.retryAfter ?? 1) * 1000;
    } else {
      el.orderState.textContent = `Checking the order failed: ${problem(r).message} Still trying…`;
    }
  } catch {
    el.orderState.textContent = 'Cannot reach the server; still waiting for the payment confirmation…';
  }
  if (Date.now() - startedAt > 60000) {
    el.orderState.textContent = 'The payment is taking longer than usual. You will not be charged twice; still checking…';
    delay = Math.max(delay, 5000);
  }
  later('order', delay, () => watchOrder(order, startedAt));
}
