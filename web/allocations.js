// Sections set aside for a presale group (docs/decisions/0032-seat-allocations.md). The seat
// map says, per section, `reservedFor` (the group) and `reservedUntil` (when it goes back on
// general sale). Only customers admitted through that group's line may hold its seats meanwhile
// (anyone else gets 409 `seats_reserved`), so the page shows such a section closed to everyone
// else, and says until when. The customer's group is read from their ticket (lines.js).

import { groupOf } from './lines.js';

const GROUP = /^[a-z][a-z0-9-]{0,31}$/;

/** A seat map section's allocation, `{ group, until }` (until: Unix ms), or null. */
export function setAsideOf(section) {
  const group = section?.reservedFor;
  if (typeof group !== 'string' || !GROUP.test(group)) return null;
  const until = Date.parse(section.reservedUntil);
  return { group, until: Number.isFinite(until) ? until : null };
}

/** Whether a section set aside as `setAside` is closed to the holder of `queueId` at `now`:
 *  set aside for another group (or the customer is in no group), its window not ended. */
export function closedToUs(setAside, queueId, now = Date.now()) {
  if (!setAside) return false;
  if (setAside.until !== null && now >= setAside.until) return false;
  return groupOf(queueId) !== setAside.group;
}

/** What the section's card says of its allocation ('' when it has none). */
export function describeSetAside(setAside, queueId, now = Date.now()) {
  if (!setAside || (setAside.until !== null && now >= setAside.until)) return '';
  const until = setAside.until === null
    ? 'until the presale ends'
    : `until ${new Date(setAside.until).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`;
  return closedToUs(setAside, queueId, now)
    ? `Set aside for the ${setAside.group} presale ${until}; on general sale after that.`
    : `Set aside for your presale (${setAside.group}) ${until}.`;
}
