// The page's ETA (web/status.js's etaRange and foreseenSeconds) under node: the model of the mean
// slot time without a forecast of the slots, the forecast's slots held to their deadline, and
// (given ETA_CASES, a file tests/page_eta.rs writes from the Rust model) the same figures as
// `EventStatus::eta_range_at` for every case.
// Run: node --test tests/web/eta.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

// status.js's page modules find their elements at import: a document with none will do here.
globalThis.document = { getElementById: () => null, addEventListener: () => {}, visibilityState: 'visible' };
const { etaRange, foreseenSeconds } = await import('../../web/status.js');

const NOW = Date.parse('2026-12-03T18:00:00Z');

test('without a forecast of the slots, the cap frees slots at maxActive ÷ slotSeconds', () => {
  // 1,100 numbers ahead, 1.1 a admission: 1,000 admissions at 100 ÷ 30 s a second, seen 2.5 s
  // later; the range with the slot time a quarter shorter and longer.
  const status = {
    servingUpTo: 0,
    pace: { admitsPerSecond: 50, maxActive: 100, slotsFree: 0, slotsInUse: 100, slotSeconds: 30,
      sustainedAdmitsPerSecond: 100 / 30, numbersPerAdmission: 1.1 },
  };
  const range = etaRange(status, 1_100, NOW);
  assert.ok(Math.abs(range.likely - 302.5) < 1e-9, `${range.likely}`);
  assert.ok(Math.abs(range.earliest - 227.5) < 1e-9, `${range.earliest}`);
  assert.ok(Math.abs(range.latest - 377.5) < 1e-9, `${range.latest}`);
  assert.deepEqual(etaRange(status, 0, NOW), { earliest: 0, likely: 0, latest: 0 });
});

test('a slot held to its deadline frees then, and the rate fills free slots', () => {
  const pace = { admitsPerSecond: 50, maxActive: 40, slotsFree: 0, slotsInUse: 40, slotSeconds: 20,
    sustainedAdmitsPerSecond: 2, numbersPerAdmission: 1, sessionSeconds: 120, heldToTheEndShare: 0,
    quickSlotSeconds: 10, heldToDeadline: Array(9).fill([60, 40 / 9]) };
  const first = etaRange({ servingUpTo: 0, pace }, 1, NOW).likely - 2.5;
  assert.ok(first >= 60 && first < 60.5, `${first}`);
  // 40 slots free, quick holders only: 20 admissions at the rate, 0.4 s.
  const roomy = { ...pace, slotsFree: 40, slotsInUse: 0, heldToDeadline: Array(9).fill([0, 0]) };
  const forecast = { session: 120, quick: 10, heldShare: 0, held: roomy.heldToDeadline };
  assert.ok(Math.abs(foreseenSeconds(roomy, 20, forecast, 1) - 0.4) < 1e-9);
});

test('the same figures as the Rust model for every case of ETA_CASES', { skip: !process.env.ETA_CASES }, () => {
  const cases = JSON.parse(readFileSync(process.env.ETA_CASES, 'utf8'));
  assert.ok(cases.length > 0);
  for (const { status, number, nowMs, expected } of cases) {
    const range = etaRange(status, number, nowMs);
    for (const end of ['earliest', 'likely', 'latest']) {
      // Rust keeps whole nanoseconds.
      assert.ok(Math.abs(range[end] - expected[end]) < 1e-6,
        `${end} of ${number}: page ${range[end]}, Rust ${expected[end]}\n${JSON.stringify(status.pace)}`);
    }
  }
});
