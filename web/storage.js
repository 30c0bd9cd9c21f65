// What survives a reload: the customer's name and open order (this tab, sessionStorage) and the
// queue ticket (this browser, localStorage).

import { state } from './state.js';

export const CUSTOMER_KEY = 'lineup.customer';
const sessionKey = () => `lineup.session.${state.eventId}.${state.customer}`;
export function loadSession() {
  try {
    return JSON.parse(sessionStorage.getItem(sessionKey()) ?? 'null') ?? {};
  } catch {
    return {};
  }
}
export function saveSession(patch) {
  try {
    const next = { ...loadSession(), ...patch };
    for (const key of Object.keys(next)) if (next[key] == null) delete next[key];
    sessionStorage.setItem(sessionKey(), JSON.stringify(next));
  } catch {
    /* storage full or disabled: nothing to keep */
  }
}

// The queue ticket survives closing the tab (localStorage): coming back, the page polls with it
// rather than joining again.
const ticketKey = () => `lineup.ticket.${state.eventId}.${state.customer}`;
export function loadTicket() {
  try {
    const ticket = JSON.parse(localStorage.getItem(ticketKey()) ?? 'null');
    return ticket && typeof ticket === 'object' ? ticket : {};
  } catch {
    return {};
  }
}
export function saveTicket(patch) {
  try {
    const next = { ...loadTicket(), ...patch };
    for (const key of Object.keys(next)) if (next[key] == null) delete next[key];
    localStorage.setItem(ticketKey(), JSON.stringify(next));
  } catch {
    /* storage full or disabled: a reload joins again (and keeps the place) */
  }
}
export function forgetTicket() {
  try { localStorage.removeItem(ticketKey()); } catch { /* nothing kept */ }
}
