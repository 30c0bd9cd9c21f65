// Named timers (one pending callback per name: scheduling it again replaces it), sleeping, and
// the jitter the contract asks for on server-given delays.

const timers = {};
export function later(name, ms, fn) {
  clearTimeout(timers[name]);
  timers[name] = setTimeout(() => { delete timers[name]; fn(); }, Math.max(0, ms));
}
export function cancel(name) {
  clearTimeout(timers[name]);
  delete timers[name];
}
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Up to 20 % random jitter on top of a server-given delay, as the contract asks. */
export const withJitter = (seconds) => seconds * 1000 * (1 + Math.random() * 0.2);
