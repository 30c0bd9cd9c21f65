// The page's sections set aside for a presale group (web/allocations.js) under node: read from
// the seat map, closed to everyone but the group's members until the window ends, and what the
// section's card says. Run: node --test tests/web/allocations.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closedToUs, describeSetAside, setAsideOf } from '../../web/allocations.js';

const MAC = 'ulKcagbhTdcZAz8xpZFLBw';
const FAN = `fanclub.12.1764547200000.${MAC}`;
const GENERAL = `12.1764547200000.${MAC}`;
const CARD = `card.3.1764547200000.${MAC}`;
const UNTIL = '2026-12-03T19:30:00Z';
const before = Date.parse(UNTIL) - 60_000;

test('a section is set aside only with a group name', () => {
  assert.deepEqual(setAsideOf({ reservedFor: 'fanclub', reservedUntil: UNTIL }), { group: 'fanclub', until: Date.parse(UNTIL) });
  assert.equal(setAsideOf({ name: 'Balcony' }), null);
  assert.equal(setAsideOf({ reservedFor: 'Fan Club<script>' }), null);
  assert.equal(setAsideOf(null), null);
});

test('closed to everyone but the group until its window ends', () => {
  const floor = setAsideOf({ reservedFor: 'fanclub', reservedUntil: UNTIL });
  assert.equal(closedToUs(floor, FAN, before), false);
  assert.equal(closedToUs(floor, GENERAL, before), true);
  assert.equal(closedToUs(floor, CARD, before), true);
  assert.equal(closedToUs(floor, null, before), true);
  assert.equal(closedToUs(floor, GENERAL, Date.parse(UNTIL)), false);
  assert.equal(closedToUs(null, GENERAL, before), false);
});

test('the card says for whom and until when, and nothing once the window ended', () => {
  const floor = setAsideOf({ reservedFor: 'fanclub', reservedUntil: UNTIL });
  assert.match(describeSetAside(floor, GENERAL, before), /^Set aside for the fanclub presale until .+; on general sale after that\.$/);
  assert.match(describeSetAside(floor, FAN, before), /^Set aside for your presale \(fanclub\) until /);
  assert.equal(describeSetAside(floor, GENERAL, Date.parse(UNTIL)), '');
  assert.equal(describeSetAside(null, GENERAL, before), '');
});
