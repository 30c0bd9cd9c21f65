// What the page knows, in one object the other modules read and write (nothing on `window`),
// and the server's clock as its Date header tells it.

import { DEFAULT_PARTY_SIZE } from './config.js';

export const state = {
  eventId: 'demo',
  eventName: '',
  currency: 'KRW',
  holdSeconds: 300,
  customer: '',
  // idle | joining | waiting | choosing | holding | held | paying | paid | closed
  phase: 'idle',
  queueId: null, // the latest signed ticket: what a poll (the claim) and a reload use
  number: null, // our queue number, once known
  entrant: null, // before the draw: our hash in the pre-queue, to find the number by
  startDistance: null, // the distance to the front when first seen, for the progress bar
  restoreAnswered: null, // the status's restoredAt we last polled for
  accessToken: null,
  admissionExpiresAt: null,
  layout: null, // {version, sections: [{name, price, currency, rows: [{name, seats, first}], seats}], places}
  availability: null, // per layout section: {seats, available, bits} (bit i: seat i is available)
  seatsLoading: false,
  view: { section: null, firstRow: 0 }, // the open section (its name) and its first row shown
  partySize: DEFAULT_PARTY_SIZE, // how many seats best available asks for
  bestAvailable: null, // {section, quantity} while a best-available hold is asked for
  chosen: [],
  justTaken: new Map(), // seatId -> time (ms) until which it is shown taken whatever the map says
  order: null,
  clockSkewMs: 0, // server clock minus ours, from the Date header
  pollDeferred: false,
  warnedOneMinute: false,
};

export const serverNow = () => Date.now() + state.clockSkewMs;

/** Our clock's offset from the server's, from a Date header (whole seconds, so only an
 *  offset of more than two seconds is trusted; smaller ones are rounding). */
export function noteServerDate(dateHeader) {
  const t = Date.parse(dateHeader ?? '');
  if (Number.isNaN(t)) return;
  const skew = t + 500 - Date.now();
  state.clockSkewMs = Math.abs(skew) > 2000 ? skew : 0;
}
