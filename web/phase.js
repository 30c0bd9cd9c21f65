// The page's phase (idle, waiting, choosing, held, paid, ...): which sections and buttons show
// and which timers run. Every flow moves the page on through setPhase.

import { el } from './dom.js';
import { state } from './state.js';
import { cancel } from './timers.js';
import { scheduleSeatRefresh } from './seats.js';
import { updateOverview } from './overview.js';
import { updateHoldButton } from './section.js';

export function setPhase(phase) {
  state.phase = phase;
  const inQueue = ['waiting', 'choosing', 'holding'].includes(phase);
  el.customer.disabled = !['idle', 'closed'].includes(phase);
  el.customerHint.textContent = el.customer.disabled
    ? 'Locked while you are in the queue or have an order.'
    : 'No spaces, up to 128 characters. Kept while this tab is open.';

  el.join.hidden = !['idle', 'joining', 'closed'].includes(phase);
  el.join.disabled = phase === 'joining' || phase === 'closed';
  el.join.setAttribute('aria-busy', String(phase === 'joining'));
  el.leave.hidden = !inQueue;
  el.progressWrap.hidden = phase !== 'waiting';

  el.seats.hidden = phase !== 'choosing' && phase !== 'holding';
  el.hold.disabled = phase === 'holding';
  el.hold.setAttribute('aria-busy', String(phase === 'holding' && !state.bestAvailable));
  updateOverview(); // best available is offered only while choosing

  el.order.hidden = phase !== 'held' && phase !== 'paying';
  el.pay.disabled = phase === 'paying';
  el.release.disabled = phase === 'paying';
  el.pay.setAttribute('aria-busy', String(phase === 'paying'));

  el.ticketSection.hidden = phase !== 'paid';

  if (phase === 'choosing') scheduleSeatRefresh();
  else cancel('seats');
  if (phase !== 'waiting') cancel('poll');
  if (phase !== 'held') cancel('countdown');
  updateHoldButton();
}

export function setQueueStatus(status, text) {
  el.status.dataset.status = status;
  el.statusText.textContent = text;
}
