// Priority groups (presales, docs/decisions/0031-priority-groups.md): which line the customer
// waits in, and which is being served. A group's line has its own status and draw,
// `/events/<event>.<group>/...`; the queue ticket names the group (`<group>.<number>.<issued>.<mac>`),
// so a reload keeps reading the right line with nothing else stored.

const GROUP = /^[a-z][a-z0-9-]{0,31}$/;

/** The group a ticket's line is, or null for the event's own line. */
export function groupOf(queueId) {
  const first = String(queueId ?? '').split('.')[0];
  return GROUP.test(first) ? first : null;
}

/** The id the status and draw routes take for the line the ticket is in. */
export function lineId(eventId, queueId) {
  const group = groupOf(queueId);
  return group ? `${eventId}.${group}` : eventId;
}

/** When the ticket was issued (Unix ms), whatever its line: the last-but-one part. */
export function issuedAt(queueId) {
  const parts = String(queueId ?? '').split('.');
  return Number(parts[parts.length - 2]);
}

/** What the page says of the lines: ours, and the one served now ('' without groups). */
export function describeLines(status, queueId) {
  const groups = status?.groups;
  if (!groups || !Array.isArray(groups.order)) return '';
  const ours = groupOf(queueId);
  const serving = typeof groups.serving === 'string' ? groups.serving : '';
  const servingText = serving === 'general' ? 'the general sale' : `the ${serving} presale`;
  if (ours) {
    return `You are in the ${ours} presale line: its members are called before the general sale. ` +
      `Now serving: ${servingText}.`;
  }
  const ahead = groups.order.filter((line) => line !== 'general');
  return `Presale groups (${ahead.join(', ')}) are called before the general sale. Now serving: ${servingText}.`;
}
