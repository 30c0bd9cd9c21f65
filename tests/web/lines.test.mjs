// The page's priority-group lines (web/lines.js) under node: the group is read from the ticket
// (and only a group's name counts), the line's id for the status and draw routes, the issue
// time whatever the line, and what the page says of the lines served.
// Run: node --test tests/web/lines.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeLines, groupOf, issuedAt, lineId } from '../../web/lines.js';

const MAC = 'ulKcagbhTdcZAz8xpZFLBw';

test('a ticket names its group, and only a group name counts', () => {
  assert.equal(groupOf(`fanclub.12.1764547200000.${MAC}`), 'fanclub');
  assert.equal(groupOf(`12.1764547200000.${MAC}`), null);
  assert.equal(groupOf(`0.1764547200000.${MAC}`), null);
  assert.equal(groupOf(`Fan.12.1764547200000.${MAC}`), null);
  assert.equal(groupOf(null), null);
  assert.equal(lineId('demo', `card-2027.3.1764547200000.${MAC}`), 'demo.card-2027');
  assert.equal(lineId('demo', `3.1764547200000.${MAC}`), 'demo');
});

test('the issue time is read whatever the line', () => {
  assert.equal(issuedAt(`fanclub.12.1764547200000.${MAC}`), 1764547200000);
  assert.equal(issuedAt(`12.1764547200000.${MAC}`), 1764547200000);
});

test('the page says which line is served, and nothing without groups', () => {
  const status = { groups: { line: 'general', order: ['fanclub', 'general'], serving: 'fanclub' } };
  assert.match(describeLines(status, `3.1764547200000.${MAC}`), /Presale groups \(fanclub\).*Now serving: the fanclub presale\./);
  assert.match(describeLines(status, `fanclub.3.1764547200000.${MAC}`), /You are in the fanclub presale line/);
  const general = { groups: { ...status.groups, serving: 'general' } };
  assert.match(describeLines(general, `3.1764547200000.${MAC}`), /Now serving: the general sale\./);
  assert.equal(describeLines({}, `3.1764547200000.${MAC}`), '');
});
