// End-to-end on-sale through the waiting-room page, in Debian's Chromium, against a running
// `lineup dev --seats 20000` (LINEUP_URL, default http://127.0.0.1:3000; the demo event must have
// at least 20,000 seats, as scripts/e2e.sh starts it):
//
//   a. Alice, on a phone, joins the queue: her page shows her number and where the queue is,
//      keeps her ticket, reads the public status (no name sent) and claims once when her number
//      is called; admitted, she sees the sections, opens one (its first rows), and holds 2 seats.
//   b. Bob, on a desktop, admitted too, tries to hold one of Alice's seats from a seat map he
//      loaded before she held it: the server refuses (409 seats_unavailable), his page says which
//      seat was taken, keeps his other choice, and he gets no order.
//   c. Alice pays (checkout → the provider → Stripe's signed webhook → outbox → SQS → ticket desk); her page
//      shows the issued ticket with exactly her 2 seats; Bob's map then shows them taken.
//   e. Dana, on the 20,000-seat event, sees the section overview (no seat buttons), opens a
//      section (a page of 25 rows, then the next), is told clearly when no row has the seats
//      together, then asks for 2 best available: the server holds 2 seats side by side in one
//      row (checked against the layout the API publishes); she pays and sees her ticket.
//   d. Carol joins an event of its own before it opens (made with the `lineup` binary,
//      LINEUP_BIN, default target/debug/lineup): her page says the draw happens at opening,
//      survives a reload by polling with the stored ticket (no second join), then shows her
//      number from the published draw and claims it; the wait cost the server 3 requests.
//   f. Erin joins another event before it opens, behind a CDN that fails her: one status read
//      answered 503, her draw chunk answered 429, 429, then 503 (`page.route`). Her page reads
//      the status and the chunk again after growing, jittered pauses, never asks the origin
//      instead (no poll before her number is known), shows the number the draw gives her and
//      claims it.
//   g. Gina joins an event that asks for a proof-of-work (`--challenge-difficulty 14`): the bare
//      join is refused with 403 challenge_required and a challenge; her page solves it in a Web
//      Worker and joins again with the proof (201), then shows her number.
//   i. Ivy, imported into an event's fan club presale group, joins: she solves the challenge,
//      her answer and ticket name her group's line, her page reads that line's status and says
//      she is in the fan club's line, which line is served now, and (from a status whose pace
//      says the seats will be gone first) that the sale is likely sold out before her turn.
//   h. Hana joins an event for holders of an access code (`--code-required true`, codes from
//      `lineup event codes create`): the bare join is refused with 403 code_required and her page
//      shows the code field; a wrong code is refused (403 code_invalid) and the field stays; her
//      own code, typed in lower case with spaces, joins (201) and her number shows.
//
// Run: (cd tests/browser && npm install) once, then `node --test tests/browser/` from the repo
// root. Screenshots go to target/browser/.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';

const BASE = (process.env.LINEUP_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SHOTS = path.join(REPO, 'target', 'browser');
const LINEUP_BIN = process.env.LINEUP_BIN ?? path.join(REPO, 'target', 'debug', 'lineup');

// Generous: the local stack (Redis + a serialised moto) is slow-ish.
const STEP_MS = 30_000; // loading pages, seat maps, holds
const ADMIT_MS = 90_000; // join → admitted (first poll comes after Retry-After, >= 5 s)
const TICKET_MS = 60_000; // pay → ticket shown
// The availability follows the seats table's stream, usually within a second or two (the local
// pump starts at the stream's end, like the template's mapping, so seeding 20,000 seats adds
// nothing), then the 1 s cache of the seats route; slack for a busy moto.
const SOLD_MS = 30_000;
const OPENS_IN_S = 20; // Carol's event opens this long after it is made
const BIG_EVENT_SEATS = 20_000; // Dana's scenario: the demo event is at least this big
const ROWS_PER_PAGE = 25; // the page shows one section this many rows at a time
// Opening, the draw (a tick), its publication in the status (the next tick), the pre-queue's
// read after opening (within 10 s) or the next one (4-6 s), the random pause before the chunk
// fetch (within the status's chunkFetchWindowSeconds: 5 s for a small draw), and slack for moto.
const NUMBER_MS = (OPENS_IN_S + 60) * 1000;

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const DESKTOP = { viewport: { width: 1440, height: 960 } };

const suffix = () => Math.random().toString(36).slice(2, 8);

test('on-sale in the browser: queue, seat map, a lost race for a seat, payment, ticket', { timeout: 600_000 }, async () => {
  const info = await devInfo();
  await mkdir(SHOTS, { recursive: true });

  const browser = await launchChromium();
  const people = [];
  try {
    // ------------------------------------------------------------------------------ a. Alice
    const alice = await customer(browser, `alice-${suffix()}`, PHONE, people);

    await step(alice, 'Alice opens the page', async () => {
      await alice.page.goto(`${BASE}/?customer=${encodeURIComponent(alice.name)}`, { timeout: STEP_MS });
      await waitText(alice.page, '#event-name', info.eventName, STEP_MS);
      assert.equal(await alice.page.inputValue('#customer'), alice.name, 'the ?customer= parameter sets "Your name"');
      assert.match(await alice.page.textContent('body'), /identity is not verified/i, 'the local-development notice is shown');
      await alice.page.locator('#join').waitFor({ state: 'visible', timeout: STEP_MS });
    });

    await step(alice, 'Alice joins the queue', async () => {
      const joined = alice.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/queue$/), { timeout: STEP_MS });
      await alice.page.click('#join');
      const response = await joined;
      assert.ok([200, 201].includes(response.status()), `join answered ${response.status()}`);
      const body = await response.json();
      assert.ok(['waiting', 'admitted'].includes(body.status), `join status ${body.status}`);
      await alice.page.waitForSelector('#status[data-status="waiting"], #status[data-status="admitted"]', { timeout: STEP_MS });
      if (body.status === 'waiting') {
        // After opening a join gives a number; the page shows it and where the queue is.
        assert.ok(Number.isInteger(body.number) && Number.isInteger(body.servingUpTo),
          `a waiting answer after opening has a number: ${JSON.stringify(body)}`);
        await alice.page.waitForSelector(`#position[data-number="${body.number}"]`, { timeout: STEP_MS });
        const position = await alice.page.textContent('#position');
        assert.match(position, new RegExp(`number is ${body.number.toLocaleString('en-US')}\\b`),
          `the page shows the number ${body.number}, got "${position}"`);
        if (body.number > body.servingUpTo) {
          const eta = await alice.page.textContent('#eta');
          assert.match(eta, /now serving up to [\d,]+: [\d,]+ numbers? to go before yours\. estimated wait/i,
            `the page shows where the queue is, the distance and the ETA, got "${eta}"`);
        }
        assert.equal(storedTicket(await alice.page.evaluate((key) => localStorage.getItem(key), ticketKey(info.eventId, alice.name))).queueId,
          body.queueId, 'the page keeps the ticket in localStorage');
      }
      await shot(alice.page, '01-alice-queue.png');
    });

    let section;
    await step(alice, 'Alice is admitted, sees the sections and opens the first', async () => {
      await waitAdmitted(alice);
      section = await alice.page.getAttribute('.section-card >> nth=0', 'data-section');
      await openSection(alice, section);
      // The wait: the public status read without her name, and one claim at the origin.
      assert.ok(alice.requests.some((r) => r.path.endsWith('/status')), 'the page read the public status');
      assert.deepEqual(alice.requests.filter((r) => r.path.endsWith('/status') && r.authorization), [],
        'the status is read without a JWT (the CDN serves everyone the same)');
      const polls = alice.requests.filter((r) => r.method === 'GET' && /\/queue\/[^/]+$/.test(r.path));
      assert.equal(polls.length, 1, `the page claims once: ${polls.map((r) => r.path).join(', ')}`);
      assert.ok(alice.requests.some((r) => r.path.endsWith('/seats')), 'the page read the availability');
      assert.deepEqual(alice.requests.filter((r) => /\/(seats|layout(\/[^/]+)?)$/.test(r.path) && r.authorization), [],
        'the availability and the layout are read without a JWT (the CDN serves everyone the same)');
      await alice.page.evaluate(() => document.getElementById('seats').scrollIntoView({ block: 'start' }));
      await shot(alice.page, '02-alice-seats.png');
      const overflow = await alice.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `the phone page scrolls sideways by ${overflow}px (only the seat rows may)`);
      const unlabelled = await alice.page.$$eval('#seatmap button[data-seat-id]',
        (buttons) => buttons.filter((b) => !/^Seat \S+, .+, .+, .+$/.test(b.getAttribute('aria-label') ?? '')).length);
      assert.equal(unlabelled, 0, 'every seat button has an aria-label "Seat <id>, <section>, <price>, <status>"');
    });

    const available = await availableSeats(alice.page);
    assert.ok(available.length >= 3, `the demo event needs at least 3 available seats, has ${available.length}`);
    const aliceSeats = pickTwo(available);

    // ------------------------------------------------------------------------------ b. Bob
    const bob = await customer(browser, `bob-${suffix()}`, DESKTOP, people);
    const bobOther = available.find((id) => !aliceSeats.includes(id) && sameRow(id, aliceSeats[0])) ??
      available.find((id) => !aliceSeats.includes(id));

    await step(bob, 'Bob joins, is admitted, and loads his seat map before Alice holds', async () => {
      await bob.page.goto(`${BASE}/?customer=${encodeURIComponent(bob.name)}`, { timeout: STEP_MS });
      await waitText(bob.page, '#event-name', info.eventName, STEP_MS);
      await bob.page.click('#join');
      await waitAdmitted(bob);
      await openSection(bob, section);
      for (const id of [aliceSeats[0], bobOther]) {
        const seat = seatButton(bob.page, id);
        assert.ok(await seat.isEnabled(), `seat ${id} is available on Bob's map before Alice holds it`);
        await seat.click();
        await waitAttr(seat, 'aria-pressed', 'true', STEP_MS, `Bob's seat ${id} is chosen`);
      }
    });

    // Bob's page refreshes its map every 5 s. Delay those refreshes (only them) until Bob has
    // tried, so that he acts on the map he had before Alice's hold, like a customer whose
    // refresh has not come yet. His hold request itself goes to the server untouched.
    let openGate;
    const gate = new Promise((resolve) => { openGate = resolve; });
    let gated = () => {};
    const firstGated = new Promise((resolve) => { gated = resolve; });
    await bob.page.route(/\/events\/[^/]+\/seats$/, async (route) => {
      gated();
      await gate;
      await route.continue().catch(() => {});
    });

    let order;
    await step(alice, 'Alice chooses 2 seats and holds them', async () => {
      for (const id of aliceSeats) {
        const seat = seatButton(alice.page, id);
        await seat.click();
        await waitAttr(seat, 'aria-pressed', 'true', STEP_MS, `Alice's seat ${id} is chosen`);
      }
      await waitText(alice.page, '#selection', aliceSeats[0], STEP_MS);
      // No refresh of Bob's map is in flight now: the next one is stuck at the gate.
      await withTimeout(firstGated, 15_000, 'Bob\'s seat map did not refresh within 15 s');
      const held = alice.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/holds$/), { timeout: STEP_MS });
      await alice.page.click('#hold');
      const response = await held;
      order = await response.json();
      assert.equal(response.status(), 201, `Alice's hold answered ${response.status()}: ${JSON.stringify(order)}`);
      assert.deepEqual([...order.seatIds].sort(), [...aliceSeats].sort(), 'the order holds Alice\'s seats');
      assert.equal(order.status, 'PENDING');

      await alice.page.locator('#countdown').waitFor({ state: 'visible', timeout: STEP_MS });
      const countdown = await alice.page.textContent('#countdown');
      assert.match(countdown, /^\d\d:\d\d$/, `the countdown reads mm:ss, got "${countdown}"`);
      const [m, s] = countdown.split(':').map(Number);
      const left = m * 60 + s;
      assert.ok(left > 0 && left <= info.holdSeconds, `the countdown shows ${countdown} for a ${info.holdSeconds} s hold`);
      const shown = await alice.page.$$eval('#order [data-seat-id]', (items) => items.map((i) => i.dataset.seatId));
      assert.deepEqual(shown.sort(), [...aliceSeats].sort(), 'the order on the page lists Alice\'s seats');
      await alice.page.waitForFunction((before) => document.querySelector('#countdown')?.textContent !== before,
        countdown, { timeout: 5_000 }).catch(() => assert.fail('the countdown does not tick'));
      await shot(alice.page, '03-alice-held.png', { fullPage: true });
    });

    await step(bob, 'Bob tries to hold one of Alice\'s seats and is refused', async () => {
      assert.ok(await seatButton(bob.page, aliceSeats[0]).isEnabled(),
        `Bob's (stale) map still offers ${aliceSeats[0]}`);
      const refused = bob.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/holds$/), { timeout: STEP_MS });
      await bob.page.click('#hold');
      const response = await refused;
      const body = await response.json().catch(() => null);
      assert.equal(response.status(), 409, `Bob's hold of ${aliceSeats[0]} and ${bobOther} answered ${response.status()}: ${JSON.stringify(body)}`);
      assert.equal(body?.error?.code, 'seats_unavailable', `409 code: ${JSON.stringify(body)}`);
      assert.deepEqual(body.error.seatIds, [aliceSeats[0]], 'the 409 names exactly the seat Alice holds');

      const message = bob.page.locator('#message');
      await waitText(bob.page, '#message', aliceSeats[0], STEP_MS);
      assert.match(await message.textContent(), /taken/i, 'Bob is told the seat was taken');
      assert.equal(await message.getAttribute('role'), 'alert', 'the refusal is announced as an alert');
      assert.doesNotMatch(await message.textContent(), /[{}"]/, 'no raw JSON in the notice');
      assert.ok(await bob.page.locator('#order').isHidden(), 'Bob has no order');
      assert.ok(await bob.page.locator('#countdown').isHidden(), 'Bob has no countdown');
      assert.ok(await seatButton(bob.page, aliceSeats[0]).isDisabled(), `${aliceSeats[0]} is now marked taken on Bob's map`);
      assert.equal(await seatButton(bob.page, aliceSeats[0]).getAttribute('aria-pressed'), 'false');
      assert.equal(await seatButton(bob.page, bobOther).getAttribute('aria-pressed'), 'true', `Bob keeps his other choice ${bobOther}`);
      await shot(bob.page, '04-bob-refused.png');
    });
    openGate();
    await bob.page.unroute(/\/events\/[^/]+\/seats$/);

    // ------------------------------------------------------------------------------ c. Alice pays
    await step(alice, 'Alice pays and gets her ticket', async () => {
      // Checkout makes the order's payment; the page then confirms it at the provider, as
      // Stripe.js would, and the provider's Stripe webhook settles the order.
      const payment = alice.page.waitForResponse((r) => isApi(r, 'POST', /\/orders\/[^/]+\/payment$/), { timeout: STEP_MS });
      const confirmed = alice.page.waitForResponse((r) => isApi(r, 'POST', /\/v1\/payment_intents\/[^/]+\/confirm$/), { timeout: STEP_MS });
      await alice.page.click('#pay');
      const response = await payment;
      assert.equal(response.status(), 200, `checkout answered ${response.status()}`);
      const made = await response.json();
      assert.equal(made.orderId, order.orderId, 'the payment is for Alice\'s order');
      assert.equal(made.amount, order.amount, 'for the amount the server decided');
      assert.equal((await confirmed).status(), 200, 'the provider took the payment');
      await alice.page.locator('#ticket [data-seat-id]').first().waitFor({ state: 'visible', timeout: TICKET_MS })
        .catch(async () => assert.fail(`no ticket within ${TICKET_MS / 1000} s; the page says: ` +
          `"${(await alice.page.textContent('#message'))?.trim()}" / "${(await alice.page.textContent('#ticket-section'))?.trim()}"`));
      const ticketSeats = await alice.page.$$eval('#ticket [data-seat-id]', (items) => items.map((i) => i.dataset.seatId));
      assert.deepEqual(ticketSeats.sort(), [...aliceSeats].sort(), 'the ticket is for exactly Alice\'s 2 seats');
      const ticket = alice.page.locator('#ticket');
      assert.equal(await ticket.getAttribute('data-order-id'), order.orderId, 'the ticket is for Alice\'s order');
      const text = await ticket.textContent();
      assert.ok(text.includes(order.orderId), 'the ticket shows the order id');
      assert.match(text, /issued at/i, 'the ticket shows when it was issued');
      assert.match(text, /Amount paid/i);
      assert.ok(await alice.page.locator('#order').isHidden(), 'the hold panel is gone once paid');
      await shot(alice.page, '05-alice-ticket.png', { fullPage: true });
    });

    // ------------------------------------------------------------------------------ d. desktop
    await step(bob, 'Bob\'s map shows Alice\'s seats taken', async () => {
      // The availability says available or not: held and sold look the same ("taken").
      await bob.page.click('#refresh');
      await bob.page.waitForFunction((ids) => ids.every((id) =>
        document.querySelector(`#seatmap [data-seat-id="${id}"]`)?.dataset.status === 'taken'), aliceSeats, { timeout: SOLD_MS })
        .catch(() => assert.fail(`Alice's seats ${aliceSeats.join(', ')} are not shown taken on Bob's map within ${SOLD_MS / 1000} s`));
      assert.ok(await seatButton(bob.page, aliceSeats[1]).isDisabled());
      await seatButton(bob.page, bobOther).scrollIntoViewIfNeeded();
      await shot(bob.page, '06-desktop-seats.png');
      await bob.page.click('#leave'); // give the admission back
      await bob.page.waitForSelector('#status[data-status="left"]', { timeout: STEP_MS });
    });

    for (const person of people) {
      assert.deepEqual(person.errors, [], `${person.name}'s page threw: ${person.errors.join('; ')}`);
    }
  } finally {
    await browser.close();
  }
});

test('best available in the browser: a 20,000-seat event, the sections first, one section a page of rows at a time, 2 seats together, payment, ticket', { timeout: 300_000 }, async () => {
  const info = await devInfo();
  await mkdir(SHOTS, { recursive: true });
  // What the page reads too, fetched here to check it against: the availability, and the
  // layout of its version (sections, rows nearest the stage first, seats in order).
  const availability = await getJson(`/events/${encodeURIComponent(info.eventId)}/seats`);
  assert.ok(availability.seats >= BIG_EVENT_SEATS, `the demo event has ${availability.seats} seats, not ${BIG_EVENT_SEATS}: ` +
    `start it with \`lineup dev --seats ${BIG_EVENT_SEATS}\` (as scripts/e2e.sh does)`);
  const layout = await getJson(availability.layout);
  assert.equal(layout.version, availability.layoutVersion, 'the availability names the layout of its version');
  const places = placesOf(layout);
  // Alice and Bob used the first section; Dana goes elsewhere.
  const target = layout.sections.at(-1);
  assert.ok(target.rows.length > ROWS_PER_PAGE, `${target.name} has more than one page of rows (${target.rows.length})`);

  const browser = await launchChromium();
  const people = [];
  try {
    const dana = await customer(browser, `dana-${suffix()}`, DESKTOP, people);
    const quantity = dana.page.locator(`select.quantity[data-section="${target.name}"]`);
    const bestAvailable = dana.page.locator(`.best-available-button[data-section="${target.name}"]`);

    await step(dana, 'Dana is admitted and sees the section overview', async () => {
      await dana.page.goto(`${BASE}/?customer=${encodeURIComponent(dana.name)}`, { timeout: STEP_MS });
      await waitText(dana.page, '#event-name', info.eventName, STEP_MS);
      await dana.page.click('#join');
      await waitAdmitted(dana);
      const cards = await dana.page.$$eval('.section-card', (items) => items.map((card) => ({
        name: card.dataset.section,
        seats: Number(card.querySelector('.section-count').dataset.seats),
        text: card.textContent,
      })));
      assert.deepEqual(cards.map((c) => c.name), layout.sections.map((s) => s.name), 'one entry per section, in layout order');
      for (const [i, card] of cards.entries()) {
        const seats = layout.sections[i].rows.reduce((n, row) => n + row.seats.length, 0);
        assert.equal(card.seats, seats, `${card.name}: the seats in the layout`);
        assert.match(card.text, new RegExp(`[\\d,]+ of ${seats.toLocaleString('en-US')} seats available`), `${card.name} says how many seats are left: "${card.text}"`);
        assert.match(card.text, /₩[\d,]+ a seat/, `${card.name} shows its price: "${card.text}"`);
      }
      assert.equal(await dana.page.locator('button[data-seat-id]').count(), 0, 'the overview has no seat buttons');
      assert.equal(await quantity.inputValue(), '2', 'best available asks for 2 seats unless told otherwise');
      await dana.page.evaluate(() => document.getElementById('seats').scrollIntoView({ block: 'start' }));
      await shot(dana.page, '09-dana-overview.png');
    });

    await step(dana, `Dana opens ${target.name}: its seats, a page of rows at a time`, async () => {
      await openSection(dana, target.name);
      const rowsShown = async () => dana.page.$$eval('#seatmap .seat-row', (rows) => rows.map((row) => row.dataset.row));
      const firstPage = target.rows.slice(0, ROWS_PER_PAGE);
      assert.deepEqual(await rowsShown(), firstPage.map((row) => row.name), 'the first 25 rows, nearest the stage first');
      assert.equal(await dana.page.locator('#seatmap button[data-seat-id]').count(), firstPage.reduce((n, row) => n + row.seats.length, 0),
        'a button for each seat of those rows, and none more');
      const firstRow = await dana.page.$$eval(`#seatmap .seat-row[data-row="${target.rows[0].name}"] button[data-seat-id]`,
        (buttons) => buttons.map((b) => b.dataset.seatId));
      assert.deepEqual(firstRow, target.rows[0].seats, 'the row\'s seats in order along the row');
      const unlabelled = await dana.page.$$eval('#seatmap button[data-seat-id]',
        (buttons) => buttons.filter((b) => !/^Seat \S+, .+, .+, .+$/.test(b.getAttribute('aria-label') ?? '')).length);
      assert.equal(unlabelled, 0, 'every seat button has an aria-label "Seat <id>, <section>, <price>, <status>"');
      await shot(dana.page, '10-dana-section.png');

      await dana.page.click('#rows-next');
      await dana.page.waitForSelector(`#seatmap .seat-row[data-row="${target.rows[ROWS_PER_PAGE].name}"]`, { timeout: STEP_MS });
      assert.deepEqual(await rowsShown(), target.rows.slice(ROWS_PER_PAGE, 2 * ROWS_PER_PAGE).map((row) => row.name), 'the next 25 rows');
      assert.match(await dana.page.textContent('#rows-status'), new RegExp(`26–\\d+ of ${target.rows.length.toLocaleString('en-US')}`));
      await dana.page.click('#rows-prev');
      await dana.page.waitForSelector(`#seatmap .seat-row[data-row="${target.rows[0].name}"]`, { timeout: STEP_MS });

      await dana.page.click('#back');
      await dana.page.locator('#overview').waitFor({ state: 'visible', timeout: STEP_MS });
      assert.equal(await dana.page.locator('button[data-seat-id]').count(), 0, 'back at the overview, no seat buttons are kept');
    });

    await step(dana, 'When no row has the seats together, the page says so and keeps the overview', async () => {
      // The answer is stubbed (once): no row of a fresh 20,000-seat venue lacks 4 seats together.
      await dana.page.route(/\/events\/[^/]+\/holds$/, (route) => route.fulfill({
        status: 409,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'no_seats_together', message: `no row of ${target.name} has 4 available seats together; ask for fewer, another section, or pick seats` } }),
      }), { times: 1 });
      await quantity.selectOption('4');
      await bestAvailable.click();
      await dana.page.waitForSelector('#message[data-code="no_seats_together"]', { timeout: STEP_MS });
      const message = await dana.page.textContent('#message');
      assert.match(message, new RegExp(`No row of ${target.name} has 4 seats together`), `the notice says why: "${message}"`);
      assert.match(message, /fewer seats.*another section.*yourself/i, 'and what to do instead');
      assert.equal(await dana.page.getAttribute('#message', 'role'), 'alert');
      assert.ok(await dana.page.locator('#overview').isVisible(), 'the overview stays');
      assert.ok(await dana.page.locator('#order').isHidden(), 'nothing is held');
      await quantity.selectOption('2');
    });

    let order;
    await step(dana, `Dana asks for 2 best available in ${target.name} and holds 2 seats side by side`, async () => {
      const held = dana.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/holds$/), { timeout: STEP_MS });
      await bestAvailable.click();
      const response = await held;
      order = await response.json();
      assert.deepEqual(response.request().postDataJSON(), { section: target.name, quantity: 2 }, 'the page asks for 2 seats in the section');
      assert.equal(response.status(), 201, `best available answered ${response.status()}: ${JSON.stringify(order)}`);
      assert.equal(order.status, 'PENDING');
      assert.equal(order.seatIds.length, 2, `2 seats held: ${order.seatIds}`);
      const [a, b] = order.seatIds.map((id) => places.get(id));
      assert.ok(a && b, `the seats ${order.seatIds} are in the layout`);
      assert.equal(a.section, target.name, `the seats are in ${target.name}: ${order.seatIds}`);
      assert.ok(a.section === b.section && a.row === b.row, `the seats share a row: ${order.seatIds}`);
      assert.equal(Math.abs(a.position - b.position), 1, `the seats are side by side: ${order.seatIds}`);

      await dana.page.locator('#countdown').waitFor({ state: 'visible', timeout: STEP_MS });
      assert.match(await dana.page.textContent('#countdown'), /^\d\d:\d\d$/);
      const shown = await dana.page.$$eval('#order [data-seat-id]', (items) => items.map((i) => i.dataset.seatId));
      assert.deepEqual(shown.sort(), [...order.seatIds].sort(), 'the held order on the page lists the seats');
      await shot(dana.page, '11-dana-held.png');
    });

    await step(dana, 'Dana pays and gets her ticket', async () => {
      const paid = dana.page.waitForResponse((r) => isApi(r, 'POST', /\/orders\/[^/]+\/payment$/), { timeout: STEP_MS });
      await dana.page.click('#pay');
      assert.equal((await paid).status(), 200);
      await dana.page.locator('#ticket [data-seat-id]').first().waitFor({ state: 'visible', timeout: TICKET_MS })
        .catch(async () => assert.fail(`no ticket within ${TICKET_MS / 1000} s; the page says: "${(await dana.page.textContent('#message'))?.trim()}"`));
      const ticketSeats = await dana.page.$$eval('#ticket [data-seat-id]', (items) => items.map((i) => i.dataset.seatId));
      assert.deepEqual(ticketSeats.sort(), [...order.seatIds].sort(), 'the ticket is for the 2 seats held');
      assert.equal(await dana.page.getAttribute('#ticket', 'data-order-id'), order.orderId);
      await shot(dana.page, '12-dana-ticket.png', { fullPage: true });
    });

    // The layout is immutable: fetched once, however often the availability was read.
    const layoutReads = dana.requests.filter((r) => /\/layout\/[^/]+$/.test(r.path));
    assert.equal(layoutReads.length, 1, `the page fetched the layout once: ${JSON.stringify(layoutReads)}`);
    assert.ok(dana.requests.filter((r) => r.path.endsWith('/seats')).every((r) => !r.authorization),
      'the availability is read without a JWT');
    for (const person of people) {
      assert.deepEqual(person.errors, [], `${person.name}'s page threw: ${person.errors.join('; ')}`);
    }
  } finally {
    await browser.close();
  }
});

test('pre-queue in the browser: the draw at opening, a reload that keeps the ticket, the number from the draw', { timeout: 300_000 }, async () => {
  const info = await devInfo();
  await mkdir(SHOTS, { recursive: true });
  const event = `prequeue-${suffix()}`;
  await lineup(info, ['seed', '--event', event, '--seats', '20']);
  await lineup(info, ['event', 'open', event, '--opens-at', `+${OPENS_IN_S}s`]);

  const browser = await launchChromium();
  const people = [];
  try {
    const carol = await customer(browser, `carol-${suffix()}`, PHONE, people);
    const url = `${BASE}/?customer=${encodeURIComponent(carol.name)}&event=${encodeURIComponent(event)}`;
    let joined;

    await step(carol, 'Carol joins before opening and is told the draw happens at opening', async () => {
      await carol.page.goto(url, { timeout: STEP_MS });
      await waitText(carol.page, '#event-name', event, STEP_MS);
      const answer = carol.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/queue$/), { timeout: STEP_MS });
      await carol.page.click('#join');
      const response = await answer;
      joined = await response.json();
      assert.equal(response.status(), 201, `join answered ${response.status()}: ${JSON.stringify(joined)}`);
      assert.equal(joined.status, 'waiting');
      assert.equal(joined.number, undefined, `no number before the draw: ${JSON.stringify(joined)}`);
      assert.match(joined.entrant ?? '', /^[0-9a-f]{32}$/, 'the answer carries the entrant hash');
      await carol.page.waitForSelector('#position[data-pre-queue="true"]', { timeout: STEP_MS });
      assert.match(await carol.page.textContent('#position'), /pre-queue.*draw happens at opening/i);
      assert.match(await carol.page.textContent('#eta'), /sale opens/i);
      await shot(carol.page, '07-carol-pre-queue.png');
    });

    await step(carol, 'Carol reloads: the page polls with her ticket instead of joining again', async () => {
      const stored = storedTicket(await carol.page.evaluate((key) => localStorage.getItem(key), ticketKey(event, carol.name)));
      assert.equal(stored.queueId, joined.queueId, 'the ticket is kept in localStorage');
      assert.equal(stored.entrant, joined.entrant, 'so is the entrant hash');
      const before = carol.requests.length;
      const polled = carol.page.waitForResponse((r) => isApi(r, 'GET', /\/events\/[^/]+\/queue\/[^/]+$/), { timeout: STEP_MS });
      await carol.page.reload({ timeout: STEP_MS });
      const response = await polled;
      assert.equal(response.status(), 200);
      assert.equal(decodeURIComponent(new URL(response.url()).pathname.split('/').pop()), joined.queueId, 'it polls with the stored ticket');
      await carol.page.waitForSelector('#position[data-pre-queue="true"]', { timeout: STEP_MS });
      const since = carol.requests.slice(before);
      assert.ok(!since.some((r) => r.method === 'POST' && r.path.endsWith('/queue')), 'no second join after the reload');
    });

    await step(carol, 'Carol finds her number in the published draw and is admitted', async () => {
      // Her number is shown from the draw until called, and with the admission after.
      await carol.page.waitForSelector('#position[data-number]', { timeout: NUMBER_MS }).catch(async () => {
        assert.fail(`no number within ${NUMBER_MS / 1000} s of joining; the page says "${(await carol.page.textContent('#position'))?.trim()}"`);
      });
      await waitAdmitted(carol);
      const number = Number(await carol.page.getAttribute('#position', 'data-number'));
      const listed = carol.draws.flatMap((chunk) => chunk?.entries ?? []).find(([entrant]) => entrant === joined.entrant);
      assert.ok(listed, `the page fetched the draw chunk listing Carol (${carol.draws.length} chunk(s) fetched)`);
      assert.equal(number, listed[1], 'the page shows the number the published draw gives her');
      assert.match(await carol.page.textContent('#position'), new RegExp(`number ${number}\\b.*called`, 'i'));
      const stored = storedTicket(await carol.page.evaluate((key) => localStorage.getItem(key), ticketKey(event, carol.name)));
      assert.equal(stored.number, number, 'the stored ticket has the number');
      await shot(carol.page, '08-carol-admitted.png');
      // The whole wait cost the server 3 requests: the join, the reload's poll, the claim.
      const origin = carol.requests.filter((r) => /\/queue(\/[^/]+)?$/.test(r.path));
      assert.deepEqual(origin.map((r) => r.method), ['POST', 'GET', 'GET'], `origin requests: ${JSON.stringify(origin)}`);
      assert.ok(carol.requests.filter((r) => r.path.endsWith('/status')).every((r) => !r.authorization),
        'the status is read without a JWT');
    });

    await step(carol, 'Carol gives the admission back, and the ticket is forgotten', async () => {
      await carol.page.click('#leave');
      await carol.page.waitForSelector('#status[data-status="left"]', { timeout: STEP_MS });
      assert.equal(await carol.page.evaluate((key) => localStorage.getItem(key), ticketKey(event, carol.name)), null);
    });

    for (const person of people) {
      assert.deepEqual(person.errors, [], `${person.name}'s page threw: ${person.errors.join('; ')}`);
    }
  } finally {
    await browser.close();
  }
});

test('pre-queue behind a failing CDN: the status and the chunk read again after backoffs, never the origin instead', { timeout: 300_000 }, async () => {
  const info = await devInfo();
  await mkdir(SHOTS, { recursive: true });
  const event = `flaky-${suffix()}`;
  await lineup(info, ['seed', '--event', event, '--seats', '20']);
  await lineup(info, ['event', 'open', event, '--opens-at', `+${OPENS_IN_S}s`]);

  const browser = await launchChromium();
  const people = [];
  try {
    const erin = await customer(browser, `erin-${suffix()}`, PHONE, people);
    // The CDN, failing: the second status read (the first after opening) a 503, the first three
    // chunk reads a 429 (the WAF's body, no Retry-After: API Gateway's throttle), another 429,
    // then a 503 with Retry-After: 1. Every read is timed.
    const statusReads = [];
    const chunkReads = [];
    const failing = { 2: { status: 503, retryAfter: '1', body: { error: { code: 'service_unavailable', message: 'the service is briefly unavailable; retry after the Retry-After delay' } } } };
    const failingChunk = {
      1: { status: 429, body: { message: 'Too Many Requests' } },
      2: { status: 429, body: { message: 'Too Many Requests' } },
      3: { status: 503, retryAfter: '1', body: { error: { code: 'service_unavailable', message: 'the service is briefly unavailable; retry after the Retry-After delay' } } },
    };
    const answer = (route, failure) => route.fulfill({
      status: failure.status,
      contentType: 'application/json',
      headers: failure.retryAfter ? { 'Retry-After': failure.retryAfter } : {},
      body: JSON.stringify(failure.body),
    });
    const queueRequests = []; // the origin's queue routes: the join, a poll (the claim)
    erin.page.on('request', (request) => {
      if (/\/queue(\/[^/]+)?$/.test(new URL(request.url()).pathname)) queueRequests.push({ method: request.method(), at: Date.now() });
    });
    await erin.page.route((url) => /^\/events\/[^/]+\/status$/.test(url.pathname), (route) => {
      statusReads.push(Date.now());
      const failure = failing[statusReads.length];
      return failure ? answer(route, failure) : route.continue();
    });
    await erin.page.route((url) => /^\/events\/[^/]+\/draw\/[0-9a-f]+$/.test(url.pathname), (route) => {
      chunkReads.push(Date.now());
      const failure = failingChunk[chunkReads.length];
      return failure ? answer(route, failure) : route.continue();
    });
    let joined;

    await step(erin, 'Erin joins before opening', async () => {
      await erin.page.goto(`${BASE}/?customer=${encodeURIComponent(erin.name)}&event=${encodeURIComponent(event)}`, { timeout: STEP_MS });
      await waitText(erin.page, '#event-name', event, STEP_MS);
      const response = erin.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/queue$/), { timeout: STEP_MS });
      await erin.page.click('#join');
      joined = await (await response).json();
      assert.equal(joined.status, 'waiting');
      assert.match(joined.entrant ?? '', /^[0-9a-f]{32}$/, 'a pre-queue entrant');
      await erin.page.waitForSelector('#position[data-pre-queue="true"]', { timeout: STEP_MS });
    });

    await step(erin, 'Erin finds her number through the failures, with growing pauses, and claims it', async () => {
      await erin.page.waitForSelector('#position[data-number]', { timeout: NUMBER_MS }).catch(async () => {
        assert.fail(`no number within ${NUMBER_MS / 1000} s (status reads ${statusReads.length}, chunk reads ${chunkReads.length}); ` +
          `the page says "${(await erin.page.textContent('#position'))?.trim()}"`);
      });
      // Until the chunk answered, the origin heard only her join: no poll in place of the failed
      // status read or chunk reads.
      const beforeAnswer = queueRequests.filter((r) => r.at < chunkReads[chunkReads.length - 1]).map((r) => r.method);
      assert.deepEqual(beforeAnswer, ['POST'], `origin requests before the chunk answered: ${JSON.stringify(beforeAnswer)}`);
      // The failed status read was read again after its backoff (1-2 s, Retry-After 1 s), not 5 s.
      assert.ok(statusReads.length >= 3, `status reads: ${statusReads.length}`);
      const afterFailure = statusReads[2] - statusReads[1];
      assert.ok(afterFailure >= 900 && afterFailure <= 3_000, `the status was read again ${afterFailure} ms after its 503`);
      // The chunk: three failures, then the answer; each pause about twice the one before
      // (1-2 s, 2-4 s, 4-8 s: half the ceiling plus a random half of it).
      assert.equal(chunkReads.length, 4, `chunk reads: ${chunkReads.length}`);
      const pauses = chunkReads.slice(1).map((t, i) => t - chunkReads[i]);
      const [first, second, third] = pauses;
      assert.ok(first >= 900 && first <= 2_500, `pauses ${pauses}: the first 1-2 s`);
      assert.ok(second >= 1_900 && second <= 4_500, `pauses ${pauses}: the second 2-4 s`);
      assert.ok(third >= 3_900 && third <= 8_500, `pauses ${pauses}: the third 4-8 s`);
      // The number shown is the one the (fourth, answered) chunk gives her.
      const number = Number(await erin.page.getAttribute('#position', 'data-number'));
      const listed = erin.draws.flatMap((chunk) => chunk?.entries ?? []).find(([entrant]) => entrant === joined.entrant);
      assert.ok(listed, `the answered chunk lists Erin (${erin.draws.length} chunk(s) answered)`);
      assert.equal(number, listed[1], 'the page shows the number the published draw gives her');
      await waitAdmitted(erin);
      const origin = erin.requests.filter((r) => /\/queue(\/[^/]+)?$/.test(r.path)).map((r) => r.method);
      assert.deepEqual(origin, ['POST', 'GET'], `the join, then the claim: ${JSON.stringify(origin)}`);
      await shot(erin.page, '09-erin-admitted-through-failures.png');
    });

    await step(erin, 'Erin gives the admission back', async () => {
      await erin.page.click('#leave');
      await erin.page.waitForSelector('#status[data-status="left"]', { timeout: STEP_MS });
    });
    for (const person of people) {
      assert.deepEqual(person.errors, [], `${person.name}'s page threw: ${person.errors.join('; ')}`);
    }
  } finally {
    await browser.close();
  }
});

test('bot challenge in the browser: a bare join refused with a challenge, solved in a worker, joined', { timeout: 300_000 }, async () => {
  const info = await devInfo();
  await mkdir(SHOTS, { recursive: true });
  const event = `challenged-${suffix()}`;
  await lineup(info, ['seed', '--event', event, '--seats', '20']);
  await lineup(info, ['event', 'open', event, '--challenge-difficulty', '14']);

  const browser = await launchChromium();
  const people = [];
  try {
    const gina = await customer(browser, `gina-${suffix()}`, PHONE, people);
    const url = `${BASE}/?customer=${encodeURIComponent(gina.name)}&event=${encodeURIComponent(event)}`;
    await step(gina, 'Gina joins: refused with a challenge, her page solves it and joins with the proof', async () => {
      await gina.page.goto(url, { timeout: STEP_MS });
      await waitText(gina.page, '#event-name', event, STEP_MS);
      const answers = [];
      gina.page.on('response', async (r) => {
        if (isApi(r, 'POST', /\/events\/[^/]+\/queue$/)) {
          answers.push({ status: r.status(), body: await r.json().catch(() => null), sent: r.request().postDataJSON() });
        }
      });
      await gina.page.click('#join');
      await gina.page.waitForSelector('#position[data-number]', { timeout: STEP_MS });
      await recorded(() => answers.length >= 2);
      assert.equal(answers.length, 2, `two joins: ${JSON.stringify(answers)}`);
      const [refused, joined] = answers;
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, 'challenge_required');
      assert.equal(refused.body.error.difficulty, 14);
      assert.equal(joined.status, 201, JSON.stringify(joined.body));
      assert.equal(joined.sent.proofOfWork.challenge, refused.body.error.challenge, 'the proof answers the challenge');
      assert.match(joined.sent.proofOfWork.nonce, /^[0-9]+$/);
      await shot(gina.page, '13-gina-joined-after-the-challenge.png');
    });
    for (const person of people) {
      assert.deepEqual(person.errors, [], `${person.name}'s page threw: ${person.errors.join('; ')}`);
    }
  } finally {
    await browser.close();
  }
});

test('access code in the browser: asked for, a wrong one refused, her own joins', { timeout: 300_000 }, async () => {
  const info = await devInfo();
  await mkdir(SHOTS, { recursive: true });
  const event = `coded-${suffix()}`;
  await lineup(info, ['seed', '--event', event, '--seats', '20']);
  await lineup(info, ['event', 'open', event, '--code-required', 'true']);
  const codes = (await lineup(info, ['event', 'codes', 'create', '--event', event, '--count', '2']))
    .trim().split('\n');
  assert.equal(codes.length, 2, `two codes printed: ${codes}`);
  // The second code's holder has not come: Hana types someone else's, then her own.
  const [hers, wrong] = [codes[0], 'ZZZZ-ZZZZ-ZZZZ-ZZZZ'];

  const browser = await launchChromium();
  const people = [];
  try {
    const hana = await customer(browser, `hana-${suffix()}`, PHONE, people);
    const url = `${BASE}/?customer=${encodeURIComponent(hana.name)}&event=${encodeURIComponent(event)}`;
    const answers = [];
    hana.page.on('response', async (r) => {
      if (isApi(r, 'POST', /\/events\/[^/]+\/queue$/)) {
        answers.push({ status: r.status(), body: await r.json().catch(() => null), sent: r.request().postDataJSON() });
      }
    });
    await step(hana, 'Hana joins without a code: asked for one', async () => {
      await hana.page.goto(url, { timeout: STEP_MS });
      await waitText(hana.page, '#event-name', event, STEP_MS);
      assert.equal(await hana.page.isVisible('#access-code'), false, 'no code field before it is asked for');
      await hana.page.click('#join');
      await hana.page.waitForSelector('#access-code', { state: 'visible', timeout: STEP_MS });
      assert.equal(answers.at(-1).status, 403);
      assert.equal(answers.at(-1).body.error.code, 'code_required');
      await shot(hana.page, '14-hana-asked-for-a-code.png');
    });
    await step(hana, 'a wrong code is refused and the field stays', async () => {
      await hana.page.fill('#access-code', wrong);
      // This join's own answer (the listener above records it a moment later, asynchronously).
      const answered = hana.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/queue$/), { timeout: STEP_MS });
      await hana.page.press('#access-code', 'Enter');
      const response = await answered;
      assert.equal(response.status(), 403);
      assert.equal((await response.json()).error.code, 'code_invalid');
      assert.equal(response.request().postDataJSON().code, wrong);
      await hana.page.waitForFunction(() => document.getElementById('access-code').getAttribute('aria-invalid') === 'true',
        null, { timeout: STEP_MS });
      assert.equal(await hana.page.isVisible('#access-code'), true);
    });
    await step(hana, 'her own code, typed loosely, joins', async () => {
      const typed = hers.toLowerCase().replaceAll('-', ' ');
      await hana.page.fill('#access-code', typed);
      const answered = hana.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/queue$/), { timeout: STEP_MS });
      await hana.page.click('#join');
      const response = await answered;
      assert.equal(response.status(), 201, await response.text());
      assert.equal(response.request().postDataJSON().code, typed);
      await hana.page.waitForSelector('#position[data-number]', { timeout: STEP_MS });
      await shot(hana.page, '15-hana-joined-with-her-code.png');
    });
    for (const person of people) {
      assert.deepEqual(person.errors, [], `${person.name}'s page threw: ${person.errors.join('; ')}`);
    }
  } finally {
    await browser.close();
  }
});

test('who gets in, in the browser: a presale member solves the challenge, waits in her group\'s line, is told it is likely sold out', { timeout: 300_000 }, async () => {
  const info = await devInfo();
  await mkdir(SHOTS, { recursive: true });
  const event = `presale-${suffix()}`;
  const ivyName = `ivy-${suffix()}`;
  await lineup(info, ['seed', '--event', event, '--seats', '20']);
  await lineup(info, ['event', 'open', event, '--challenge-difficulty', '14']);
  await lineup(info, ['event', 'group', 'add', '--event', event, '--group', 'fanclub', '--members', 'list']);
  const members = path.join(SHOTS, `${event}-members.txt`);
  await writeFile(members, `${ivyName}\n`);
  await lineup(info, ['event', 'group', 'import', '--event', event, '--group', 'fanclub', members]);

  const browser = await launchChromium();
  const people = [];
  try {
    const ivy = await customer(browser, ivyName, PHONE, people);
    // Her line's status as the CDN serves it, with the pace of a sale about to sell out (20
    // seats left, 40 shoppers holding 2 seats each) and her number not called yet: what the
    // page makes of it is under test here; the forecast itself is the simulation's
    // (BENCHMARKS §14).
    const lineStatus = [];
    await ivy.page.route(`**/events/${event}.fanclub/status`, async (route) => {
      const response = await route.fetch();
      const status = await response.json();
      lineStatus.push(status);
      await route.fulfill({
        response,
        json: {
          ...status,
          state: 'open',
          servingUpTo: 0,
          seatsLeft: 20,
          pace: {
            admitsPerSecond: 1, maxActive: 40, slotsFree: 0, slotsInUse: 40, slotSeconds: 120,
            sustainedAdmitsPerSecond: 0.33, numbersPerAdmission: 1, noShowShare: 0.1, seatsPerAdmission: 2,
          },
        },
      });
    });
    const answers = [];
    ivy.page.on('response', async (r) => {
      if (isApi(r, 'POST', /\/events\/[^/]+\/queue$/)) {
        answers.push({ status: r.status(), body: await r.json().catch(() => null) });
      }
    });
    await step(ivy, 'Ivy joins: the challenge solved, in the fan club\'s line, told which line is served and that it is likely sold out', async () => {
      await ivy.page.goto(`${BASE}/?customer=${encodeURIComponent(ivy.name)}&event=${encodeURIComponent(event)}`, { timeout: STEP_MS });
      await waitText(ivy.page, '#event-name', event, STEP_MS);
      await ivy.page.click('#join');
      await ivy.page.waitForSelector('#position[data-number]', { timeout: STEP_MS });
      await recorded(() => answers.length >= 2);
      assert.equal(answers[0].status, 403);
      assert.equal(answers[0].body.error.code, 'challenge_required');
      const joined = answers.at(-1);
      assert.equal(joined.status, 201, JSON.stringify(joined.body));
      assert.equal(joined.body.group, 'fanclub', 'her line is the fan club\'s');
      assert.match(joined.body.queueId, /^fanclub\./, 'her ticket names the line');
      await ivy.page.waitForFunction(() => document.getElementById('eta').dataset.likelySoldOut === 'true',
        null, { timeout: STEP_MS });
      assert.match(await ivy.page.textContent('#eta'), /Likely sold out before your turn/);
      assert.match(await ivy.page.textContent('#line'),
        /You are in the fanclub presale line.*Now serving: the fanclub presale\./);
      assert.ok(lineStatus.length > 0, 'the page read her line\'s status, not the event\'s');
      assert.deepEqual(lineStatus[0].groups?.order, ['fanclub', 'general']);
      await shot(ivy.page, '16-ivy-presale-likely-sold-out.png', { fullPage: true });
    });
    for (const person of people) {
      assert.deepEqual(person.errors, [], `${person.name}'s page threw: ${person.errors.join('; ')}`);
    }
  } finally {
    await browser.close();
  }
});

test('seats set aside in the browser: the presale\'s section is its members\' alone, said so to everyone else', { timeout: 300_000 }, async () => {
  const info = await devInfo();
  await mkdir(SHOTS, { recursive: true });
  const event = `setaside-${suffix()}`;
  const ivyName = `ivy-${suffix()}`;
  const jonName = `jon-${suffix()}`;
  // 30 seats: Floor, Lower and Upper, 10 each; the Floor set aside for the fan club for an hour.
  await lineup(info, ['seed', '--event', event, '--seats', '30']);
  await lineup(info, ['event', 'open', event]);
  await lineup(info, ['event', 'group', 'add', '--event', event, '--group', 'fanclub', '--members', 'list',
    '--closes-at', '+1h', '--sections', 'Floor']);
  const members = path.join(SHOTS, `${event}-members.txt`);
  await writeFile(members, `${ivyName}\n`);
  await lineup(info, ['event', 'group', 'import', '--event', event, '--group', 'fanclub', members]);

  const browser = await launchChromium();
  const people = [];
  try {
    const ivy = await customer(browser, ivyName, DESKTOP, people);
    const jon = await customer(browser, jonName, PHONE, people);
    const floorCard = (person) => person.page.locator('.section-card[data-section="Floor"]');

    await step(ivy, 'Ivy, a fan club member, is admitted through her line: the Floor is set aside for her presale, and she holds 2 seats there', async () => {
      await ivy.page.goto(`${BASE}/?customer=${encodeURIComponent(ivy.name)}&event=${encodeURIComponent(event)}`, { timeout: STEP_MS });
      await waitText(ivy.page, '#event-name', event, STEP_MS);
      await ivy.page.click('#join');
      await waitAdmitted(ivy);
      await ivy.page.waitForFunction(() => document.querySelector('.section-card[data-section="Floor"]')?.dataset.setAside === 'ours',
        null, { timeout: STEP_MS });
      assert.match(await floorCard(ivy).textContent(), /Set aside for your presale \(fanclub\) until/);
      const held = ivy.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/holds$/), { timeout: STEP_MS });
      await ivy.page.click('.best-available-button[data-section="Floor"]');
      const response = await held;
      const order = await response.json();
      assert.equal(response.status(), 201, JSON.stringify(order));
      assert.ok(order.seatIds.every((id) => id.startsWith('FLO')), `Floor seats: ${order.seatIds}`);
    });

    await step(jon, 'Jon, in no group, is admitted after her: the Floor is shown set aside for the fan club, closed to him, the rest on sale', async () => {
      await jon.page.goto(`${BASE}/?customer=${encodeURIComponent(jon.name)}&event=${encodeURIComponent(event)}`, { timeout: STEP_MS });
      await waitText(jon.page, '#event-name', event, STEP_MS);
      await jon.page.click('#join');
      await waitAdmitted(jon);
      await jon.page.waitForFunction(() => document.querySelector('.section-card[data-section="Floor"]')?.dataset.setAside === 'closed',
        null, { timeout: STEP_MS });
      assert.match(await floorCard(jon).textContent(), /Set aside for the fanclub presale until .+; on general sale after that\./);
      assert.ok(await jon.page.locator('.best-available-button[data-section="Floor"]').isDisabled(), 'no best available in the Floor');
      assert.ok(await jon.page.locator('.best-available-button[data-section="Lower"]').isEnabled(), 'the Lower is on general sale');
      assert.equal(await jon.page.getAttribute('.section-card[data-section="Lower"]', 'data-set-aside'), '');
      await shot(jon.page, '17-jon-floor-set-aside.png', { fullPage: true });
      await openSection(jon, 'Floor');
      const choosable = await jon.page.$$eval('#seatmap button[data-seat-id]', (buttons) => buttons.filter((b) => !b.disabled).length);
      assert.equal(choosable, 0, 'no Floor seat can be chosen');
      await jon.page.click('#back');
    });

    await step(jon, 'Jon\'s page asked for a Floor seat anyway (a stale map): 409 seats_reserved, said plainly, nothing held', async () => {
      const seats = await getJson(`/events/${encodeURIComponent(event)}/seats`);
      const floor = seats.sections.find((section) => section.name === 'Floor');
      assert.equal(floor.reservedFor, 'fanclub');
      assert.ok(!Number.isNaN(Date.parse(floor.reservedUntil)));
      // The page's own best-available button is off; the request is sent as a stale page would.
      const refused = jon.page.waitForResponse((r) => isApi(r, 'POST', /\/events\/[^/]+\/holds$/), { timeout: STEP_MS });
      await jon.page.evaluate(async () => {
        const { holdBestAvailable } = await import('/holds.js');
        await holdBestAvailable('Floor');
      });
      const response = await refused;
      assert.equal(response.status(), 409);
      assert.equal((await response.json()).error.code, 'seats_reserved');
      await jon.page.waitForSelector('#message[data-code="seats_reserved"]', { timeout: STEP_MS });
      assert.match(await jon.page.textContent('#message'), /set aside for a presale you are not in/);
      assert.ok(await jon.page.locator('#order').isHidden(), 'nothing is held');
    });
    for (const person of people) {
      assert.deepEqual(person.errors, [], `${person.name}'s page threw: ${person.errors.join('; ')}`);
    }
  } finally {
    await browser.close();
  }
});

// ------------------------------------------------------------------------------------ helpers

/** Waits (a few seconds at most) until `done()`: for a response listener, which records each
 *  answer a moment after the page has acted on it (reading its body is asynchronous). */
async function recorded(done) {
  for (let waited = 0; !done() && waited < 5_000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Debian's Chromium, headless, quiet (no background traffic to count against the page's). */
function launchChromium() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Runs the `lineup` binary against the dev server's own stack (from /dev/info); its stdout. */
async function lineup(info, args) {
  const stack = ['--redis-url', info.redisUrl, '--endpoint-url', info.awsEndpointUrl,
    '--seats-table', info.tables.seats, '--orders-table', info.tables.orders,
    '--outbox-table', info.tables.outbox, '--events-table', info.tables.events];
  try {
    const { stdout } = await promisify(execFile)(LINEUP_BIN, [...args, ...stack], { timeout: STEP_MS });
    return stdout;
  } catch (error) {
    assert.fail(`lineup ${args.join(' ')} failed (${LINEUP_BIN}; set LINEUP_BIN to another build): ` +
      `${error.stderr?.trim() || error.message}`);
  }
}

async function getJson(pathOrUrl) {
  const response = await fetch(new URL(pathOrUrl, BASE), { signal: AbortSignal.timeout(STEP_MS) });
  assert.equal(response.status, 200, `GET ${pathOrUrl} answered ${response.status}`);
  return response.json();
}

/** Where each seat of a layout is: its section, its row, its position along the row. */
function placesOf(layout) {
  const places = new Map();
  for (const section of layout.sections) {
    for (const row of section.rows) {
      row.seats.forEach((seatId, position) => places.set(seatId, { section: section.name, row: row.name, position }));
    }
  }
  return places;
}

const ticketKey = (eventId, customer) => `lineup.ticket.${eventId}.${customer}`;

function storedTicket(json) {
  assert.ok(json, 'the page stored a queue ticket');
  return JSON.parse(json);
}

async function devInfo() {
  let response;
  try {
    response = await fetch(`${BASE}/dev/info`, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    assert.fail(`lineup dev is not answering at ${BASE} (${error.cause?.code ?? error.message}). ` +
      'Start it (`target/debug/lineup dev`) or set LINEUP_URL.');
  }
  assert.equal(response.status, 200, `GET ${BASE}/dev/info answered ${response.status}`);
  const info = await response.json();
  for (const field of ['eventId', 'eventName', 'currency', 'holdSeconds', 'redisUrl', 'awsEndpointUrl', 'tables']) {
    assert.ok(info[field] !== undefined, `/dev/info has no ${field}: ${JSON.stringify(info)}`);
  }
  return info;
}

async function customer(browser, name, options, people) {
  const context = await browser.newContext(options);
  context.setDefaultTimeout(STEP_MS);
  const page = await context.newPage();
  const person = { name, context, page, errors: [], requests: [], draws: [] };
  page.on('pageerror', (error) => person.errors.push(error.message));
  // What the page asked the API for (not the page's own files), and the draw chunks it got.
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (/^\/(events|orders|dev)\//.test(url.pathname)) {
      person.requests.push({ method: request.method(), path: url.pathname, authorization: request.headers().authorization ?? null });
    }
  });
  page.on('response', async (response) => {
    if (/\/draw\/[0-9a-f]+$/.test(new URL(response.url()).pathname) && response.status() === 200) {
      person.draws.push(await response.json().catch(() => null));
    }
  });
  people.push(person);
  return person;
}

/** Runs one step; on failure, says which step and for whom, and keeps a screenshot. */
async function step(person, name, body) {
  try {
    await body();
  } catch (error) {
    const file = `failed-${name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')}.png`;
    await shot(person.page, file, { fullPage: true }).catch(() => {});
    const notice = await person.page.textContent('#message', { timeout: 1_000 }).catch(() => null);
    const status = await person.page.textContent('#status', { timeout: 1_000 }).catch(() => null);
    error.message = `step "${name}" (${person.name}) failed: ${error.message}\n` +
      `  page status: ${status?.trim() || '-'}\n  page notice: ${notice?.trim() || '-'}\n  screenshot: target/browser/${file}`;
    throw error;
  }
}

async function shot(page, file, options = {}) {
  await page.screenshot({ path: path.join(SHOTS, file), ...options });
}

function isApi(response, method, pathPattern) {
  return response.request().method() === method && pathPattern.test(new URL(response.url()).pathname);
}

async function waitAdmitted(person) {
  await person.page.waitForSelector('#status[data-status="admitted"]', { timeout: ADMIT_MS }).catch(async () => {
    assert.fail(`${person.name} was not admitted within ${ADMIT_MS / 1000} s; status: ` +
      `"${(await person.page.textContent('#status'))?.trim()}", notice: "${(await person.page.textContent('#message'))?.trim()}"`);
  });
  await person.page.locator('#seats').waitFor({ state: 'visible', timeout: STEP_MS });
  // The sections come first, with their availability once it is read.
  await person.page.locator('.section-card .section-count[data-available]').first().waitFor({ state: 'visible', timeout: STEP_MS })
    .catch(() => assert.fail(`${person.name}'s section overview did not load within ${STEP_MS / 1000} s`));
}

/** Opens a section from the overview and waits for its first rows of seats. */
async function openSection(person, name) {
  await person.page.click(`.open-section[data-section="${name}"]`);
  await person.page.locator('#seatmap button[data-seat-id]').first().waitFor({ state: 'visible', timeout: STEP_MS })
    .catch(() => assert.fail(`${person.name}'s seats of ${name} did not show within ${STEP_MS / 1000} s`));
  assert.ok(await person.page.locator('#overview').isHidden(), 'the overview gives way to the section');
  const legend = await person.page.textContent('#section-view .legend');
  for (const word of ['Available', 'Your choice', 'Taken']) assert.ok(legend.includes(word), `the legend explains "${word}"`);
}

function seatButton(page, seatId) {
  return page.locator(`#seatmap button[data-seat-id="${seatId}"]`);
}

async function availableSeats(page) {
  return page.$$eval('#seatmap button[data-seat-id]:not([disabled])', (buttons) => buttons.map((b) => b.dataset.seatId));
}

/** Two available seats side by side in one row if there are, else any two; random, so reruns against the same server find free seats. */
function pickTwo(available) {
  const set = new Set(available);
  const starts = available.filter((id) => set.has(nextInRow(id)));
  if (starts.length) {
    const first = starts[Math.floor(Math.random() * starts.length)];
    return [first, nextInRow(first)];
  }
  const shuffled = [...available].sort(() => Math.random() - 0.5);
  return shuffled.slice(0, 2);
}

function nextInRow(seatId) {
  const parts = seatId.split('-');
  if (parts.length !== 3 || !/^\d+$/.test(parts[2])) return null;
  parts[2] = String(Number(parts[2]) + 1).padStart(parts[2].length, '0');
  return parts.join('-');
}

function sameRow(a, b) {
  const row = (id) => id.split('-').slice(0, 2).join('-');
  return a.split('-').length === 3 && row(a) === row(b);
}

async function waitText(page, selector, text, timeout) {
  await page.waitForFunction(([sel, t]) => document.querySelector(sel)?.textContent.includes(t), [selector, text], { timeout })
    .catch(async () => assert.fail(`"${selector}" does not show "${text}" within ${timeout / 1000} s; it shows ` +
      `"${(await page.textContent(selector, { timeout: 1_000 }).catch(() => ''))?.trim()}"`));
}

async function waitAttr(locator, name, value, timeout, what) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if ((await locator.getAttribute(name)) === value) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`${what}: ${name} is "${await locator.getAttribute(name)}", expected "${value}"`);
}

async function withTimeout(promise, ms, message) {
  let timer;
  try {
    return await Promise.race([promise, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(message)), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}
