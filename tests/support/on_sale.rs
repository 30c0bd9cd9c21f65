//! A whole on-sale for the seat tests: fresh DynamoDB tables on the local emulator, an event in
//! Redis that admits everyone at once, seats seeded, the hold/confirm/poll handlers wired to
//! them with a fixed clock, and readers for checking invariants over what was stored.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lambda_http::{Body, Request, Response};
use lineup::adapters::dynamo::event_records::DynamoEventRecords;
use lineup::adapters::dynamo::{DynamoLedger, TableNames};
use lineup::adapters::redis::queue::RedisQueue;
use lineup::application::checkout::{self, CheckoutApi};
use lineup::application::confirm;
use lineup::application::confirm::ConfirmApi;
use lineup::application::hold;
use lineup::application::hold::HoldApi;
use lineup::application::ports::queue::{Admitter, EventSettingsStore, WaitingLine};
use lineup::application::queue_api::QueueApi;
use lineup::application::seeding::{SeedOutcome, Seeding};
use lineup::application::{join, poll};
use lineup::domain::clock::{Clock, FixedClock};
use lineup::domain::draw::DrawSeed;
use lineup::domain::event_settings::{EventSettings, QueueState};
use lineup::domain::ids::{CustomerId, EventId, SeatId};
use lineup::domain::layout::SeatLayout;
use lineup::domain::seat::NewSeat;
use lineup::domain::webhook_signature::WebhookSecret;
use lineup::wiring::backends::Queue;
use lineup_cli::local_aws::tables as local_tables;
use serde_json::Value;

use crate::aws::{dynamo, unique};
use crate::{body, fresh_event, queue, request, route, sample, signing_key};

/// The development webhook secret (`lineup dev`'s simulated provider and `events/confirm.json`
/// use it).
pub use lineup_cli::local_aws::secrets::DEV_WEBHOOK_SECRET;
pub const CURRENCY: &str = "KRW";

pub fn webhook_secret() -> WebhookSecret {
    WebhookSecret::new(DEV_WEBHOOK_SECRET).expect("long enough")
}

/// A payment webhook's body: the provider's payment `payment_id` of `amount` (KRW) for `order_id`.
pub fn payment_body(order_id: &str, payment_id: &str, amount: i64) -> Value {
    serde_json::json!({
        "orderId": order_id,
        "paymentId": payment_id,
        "amount": amount,
        "currency": CURRENCY,
    })
}

/// Seat `n` of section `A`: `A-001`, `A-002`...
pub fn seat(n: usize) -> SeatId {
    SeatId::parse(&format!("A-{n:03}")).expect("valid seat id")
}

pub struct OnSale {
    pub event: EventId,
    pub queue: Arc<RedisQueue>,
    pub ledger: Arc<DynamoLedger>,
    pub tables: TableNames,
    pub dynamo: aws_sdk_dynamodb::Client,
    pub clock: Arc<FixedClock>,
    pub queue_api: QueueApi,
    pub hold_api: HoldApi,
    pub confirm_api: ConfirmApi,
    /// The checkout function's routes (a payment for a hold, a release), over localstripe.
    pub checkout_api: CheckoutApi,
    /// The events table (shared by the tests) the layout is stored in.
    pub records: Arc<DynamoEventRecords>,
    /// The layout seeded (`None`: an event without seats).
    pub layout: Option<SeatLayout>,
}

/// `seats` seats `A-001`.. at 12,000 each (KRW): even numbers in `Floor`, odd in `Balcony`, in
/// rows of ten by number.
pub fn small_layout(seats: usize) -> SeatLayout {
    let new_seats: Vec<NewSeat> = (1..=seats)
        .map(|n| NewSeat {
            seat_id: seat(n),
            section: if n % 2 == 0 {
                "Floor".to_owned()
            } else {
                "Balcony".to_owned()
            },
            row: format!("R{}", (n - 1) / 10),
            price: 12_000,
            currency: CURRENCY.to_owned(),
        })
        .collect();
    SeatLayout::from_seats(&new_seats).expect("a valid layout")
}

impl OnSale {
    /// `seats` seats `A-001`.. at 12,000 each (KRW), in fresh tables, on the shared Redis.
    pub async fn with_seats(seats: usize) -> Self {
        Self::with_seats_on(seats, queue()).await
    }

    /// The same on a Redis of the caller's (a test that flushes it needs its own).
    pub async fn with_seats_on(seats: usize, queue: Arc<RedisQueue>) -> Self {
        Self::with_layout_on((seats > 0).then(|| small_layout(seats)), queue).await
    }

    /// An on-sale of `layout`'s seats (seeded as an operator does; none if `None`), on
    /// `queue`'s Redis.
    pub async fn with_layout_on(layout: Option<SeatLayout>, queue: Arc<RedisQueue>) -> Self {
        let dynamo = dynamo().await;
        let tables = TableNames {
            seats: unique("seats"),
            orders: unique("orders"),
            outbox: unique("outbox"),
        };
        local_tables::create_ledger_tables(&dynamo, &tables)
            .await
            .expect("create tables");
        let ledger = Arc::new(DynamoLedger::new(dynamo.clone(), tables.clone()));
        let event = fresh_event();
        let records = crate::records().await;
        let board = Arc::new(queue.availability_board());
        if let Some(layout) = &layout {
            let seeded = Seeding {
                ledger: ledger.as_ref(),
                layouts: records.as_ref(),
                board: board.as_ref(),
            }
            .seed(&event, layout, &Default::default(), SystemTime::now())
            .await
            .expect("seed seats");
            assert!(matches!(seeded, SeedOutcome::Seeded { .. }), "{seeded:?}");
        }

        let clock = Arc::new(FixedClock::at(SystemTime::now()));
        let settings = EventSettings {
            state: QueueState::Open,
            opens_at: clock.now() - Duration::from_secs(60),
            max_active: 10_000,
            admit_per_second: 10_000,
            session: Duration::from_secs(600),
            claim_window: Duration::from_secs(60),
            ticket_limit: None,
            challenge_difficulty: Default::default(),
            code_required: false,
            groups: Default::default(),
        };
        queue
            .configure(&event, &settings, &DrawSeed::generate())
            .await
            .expect("configure event");

        // The handlers as the functions build them (lineup::wiring::backends).
        let backends = Queue::new(queue.clone(), records.clone());
        let queue_api = backends.queue_api(signing_key().into(), clock.clone(), None);
        let hold_api = backends.hold_api(ledger.clone(), signing_key().into(), clock.clone());
        let confirm_api =
            backends.confirm_api(ledger.clone(), webhook_secret().into(), clock.clone());
        // Checkout's provider: localstripe (its payments are made only by the tests that pay).
        let checkout_api = CheckoutApi {
            orders: ledger.clone(),
            checkout: ledger.clone(),
            provider: Arc::new(crate::localstripe::provider()),
            publishable_key: None,
            clock: clock.clone(),
        };
        Self {
            event,
            queue,
            ledger,
            tables,
            dynamo,
            clock,
            queue_api,
            hold_api,
            confirm_api,
            checkout_api,
            records,
            layout,
        }
    }

    /// Joins, admits and polls for each customer; returns their access tokens.
    pub async fn admit(&self, customers: &[CustomerId]) -> Vec<String> {
        // Through the join handler, which reserves the queue's numbers in the events table.
        for customer in customers {
            let joined =
                join::handle(&self.queue_api, crate::join_request(&self.event, customer)).await;
            assert!(
                joined.status().is_success(),
                "join: {}",
                crate::body(&joined)
            );
        }
        let report = self
            .queue
            .admit_tick(&self.event, self.clock.now())
            .await
            .expect("admit");
        assert!(report.waiting == 0, "everyone admitted at once");
        let mut tokens = Vec::new();
        for customer in customers {
            // Admitted customers are no longer in the queue: their ticket states the number they
            // had, which the claim does not need.
            let queue_id = crate::ticket_at(&self.event, customer, None, self.clock.now());
            let response = poll::handle(
                &self.queue_api,
                crate::poll_request(&self.event, customer, &queue_id),
            )
            .await;
            let polled = body(&response);
            assert_eq!(polled["status"], "admitted", "{polled}");
            tokens.push(polled["accessToken"].as_str().expect("token").to_owned());
        }
        tokens
    }

    pub fn hold_request(
        &self,
        customer: &CustomerId,
        token: Option<&str>,
        seats: &[SeatId],
    ) -> Request {
        let ids: Vec<&str> = seats.iter().map(SeatId::as_str).collect();
        let mut event = route(
            &sample("hold.json"),
            &[("eventId", self.event.as_str())],
            Some(customer),
        );
        event["body"] = serde_json::json!({ "seatIds": ids }).to_string().into();
        match token {
            Some(token) => event["headers"]["x-queue-token"] = token.into(),
            None => {
                event["headers"]
                    .as_object_mut()
                    .expect("headers")
                    .remove("x-queue-token");
            }
        }
        request(&event)
    }

    /// A request to the function that serves its route, as API Gateway routes it: `checkout`
    /// for a payment or a release, `hold` for the other customer routes.
    pub async fn send(&self, request: lambda_http::Request) -> Response<Body> {
        use lambda_http::request::RequestContext;
        use lambda_http::RequestExt;
        let route_key = match request.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(context)) => context.route_key.clone(),
            _ => None,
        };
        match route_key.as_deref() {
            Some("POST /orders/{orderId}/payment" | "DELETE /events/{eventId}/holds/{orderId}") => {
                checkout::handle(&self.checkout_api, request).await
            }
            _ => hold::handle(&self.hold_api, request).await,
        }
    }

    /// `POST /events/{eventId}/holds` with `body` (any JSON), as the customer, with the token.
    pub async fn hold_with_body(
        &self,
        customer: &CustomerId,
        token: &str,
        body: &Value,
    ) -> Response<Body> {
        let mut event = route(
            &sample("hold.json"),
            &[("eventId", self.event.as_str())],
            Some(customer),
        );
        event["body"] = body.to_string().into();
        event["headers"]["x-queue-token"] = token.into();
        hold::handle(&self.hold_api, request(&event)).await
    }

    /// Best available: `quantity` seats together in `section`.
    pub async fn hold_best(
        &self,
        customer: &CustomerId,
        token: &str,
        section: &str,
        quantity: usize,
    ) -> Response<Body> {
        self.hold_with_body(
            customer,
            token,
            &serde_json::json!({ "section": section, "quantity": quantity }),
        )
        .await
    }

    pub async fn hold(
        &self,
        customer: &CustomerId,
        token: &str,
        seats: &[SeatId],
    ) -> Response<Body> {
        hold::handle(
            &self.hold_api,
            self.hold_request(customer, Some(token), seats),
        )
        .await
    }

    /// A signed webhook for `order_id`, as the payment provider sends it.
    pub fn confirm_request(
        &self,
        order_id: &str,
        idempotency_key: &str,
        payment: &Value,
    ) -> Request {
        let body = payment.to_string();
        let signature = webhook_secret().sign(self.clock.now(), body.as_bytes());
        self.confirm_request_signed(order_id, Some(idempotency_key), &body, Some(&signature))
    }

    /// A webhook with exactly these headers (`None`: the header is left out).
    pub fn confirm_request_signed(
        &self,
        order_id: &str,
        idempotency_key: Option<&str>,
        body: &str,
        signature: Option<&str>,
    ) -> Request {
        let mut event = route(&sample("confirm.json"), &[("orderId", order_id)], None);
        event["body"] = body.into();
        match idempotency_key {
            Some(key) => event["headers"]["idempotency-key"] = key.into(),
            None => {
                event["headers"]
                    .as_object_mut()
                    .expect("headers")
                    .remove("idempotency-key");
            }
        }
        match signature {
            Some(signature) => event["headers"]["lineup-signature"] = signature.into(),
            None => {
                event["headers"]
                    .as_object_mut()
                    .expect("headers")
                    .remove("lineup-signature");
            }
        }
        request(&event)
    }

    /// Pays `amount` for the order, with a fresh idempotency key.
    pub async fn pay(&self, order_id: &str, amount: i64) -> Response<Body> {
        let payment = payment_body(order_id, &unique("pay"), amount);
        confirm::handle(
            &self.confirm_api,
            self.confirm_request(order_id, &unique("key"), &payment),
        )
        .await
    }

    /// Pays every order (hold answers: `orderId`, `amount`) at once, as webhooks arrive in a
    /// rush; the answers in the same order.
    pub async fn pay_all(&self, orders: impl IntoIterator<Item = &Value>) -> Vec<Response<Body>> {
        futures::future::join_all(orders.into_iter().map(|order| {
            self.pay(
                order["orderId"].as_str().expect("an order id"),
                order["amount"].as_i64().expect("an amount"),
            )
        }))
        .await
    }

    /// The event's seat map as `customer` asks for it, through the sample event.
    /// `GET /events/{eventId}/seats` (public) through the `status` function's handler.
    pub async fn seat_map(&self) -> Response<Body> {
        lineup::application::status::handle(
            &crate::public_api(self.records.clone()),
            request(&route(
                &sample("seats.json"),
                &[("eventId", self.event.as_str())],
                None,
            )),
        )
        .await
    }

    /// Feeds everything the seats table's stream holds so far, in order, to the `availability`
    /// handler, as its event source mapping would (applying records again is harmless).
    pub async fn sync_availability(&self) {
        let records = crate::stream::lambda_event_from_stream(&self.tables.seats).await;
        let board = self.queue.availability_board();
        let response = lineup::application::availability::handle(
            &board,
            lambda_runtime::LambdaEvent::new(records, lambda_runtime::Context::default()),
        )
        .await
        .expect("a stream event");
        assert!(response.batch_item_failures.is_empty(), "{response:?}");
    }

    /// The seats the public seat map shows available, by id (the bits over the layout).
    pub async fn available_seats(&self) -> std::collections::BTreeSet<String> {
        let map = self.seat_map().await;
        assert_eq!(map.status(), 200, "{}", body(&map));
        let map = body(&map);
        let layout = self.layout.as_ref().expect("a seeded layout");
        assert_eq!(map["layoutVersion"], layout.version());
        let mut ids = layout.seats().map(|(_, seat)| seat.seat_id);
        let mut available = std::collections::BTreeSet::new();
        for section in map["sections"].as_array().expect("sections") {
            let bits = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                section["bits"].as_str().expect("bits"),
            )
            .expect("base64");
            for index in 0..section["seats"].as_u64().expect("seats") as usize {
                let id = ids.next().expect("as many seats as the layout");
                if bits[index / 8] & (0x80 >> (index % 8)) != 0 {
                    available.insert(id.as_str().to_owned());
                }
            }
        }
        available
    }

    async fn scan(&self, table: &str) -> Vec<BTreeMap<String, Value>> {
        let items: Vec<_> = self
            .dynamo
            .scan()
            .table_name(table)
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .collect::<Vec<_>>()
            .await;
        items
            .into_iter()
            .map(|item| serde_dynamo::from_item(item.expect("scan")).expect("item as JSON"))
            .collect()
    }

    /// Every seat item, by seat id.
    pub async fn seats(&self) -> BTreeMap<String, BTreeMap<String, Value>> {
        self.scan(&self.tables.seats)
            .await
            .into_iter()
            .map(|item| (item["seat_id"].as_str().expect("seat_id").to_owned(), item))
            .collect()
    }

    /// Every order item (not locks or idempotency records), by order id.
    pub async fn orders(&self) -> BTreeMap<String, BTreeMap<String, Value>> {
        self.scan(&self.tables.orders)
            .await
            .into_iter()
            .filter(|item| {
                item["pk"]
                    .as_str()
                    .is_some_and(|pk| pk.starts_with("ORDER#"))
            })
            .map(|item| {
                (
                    item["order_id"].as_str().expect("order_id").to_owned(),
                    item,
                )
            })
            .collect()
    }

    pub async fn outbox(&self) -> Vec<BTreeMap<String, Value>> {
        self.scan(&self.tables.outbox).await
    }

    /// Everything the three tables hold, to show a refused request changed nothing.
    pub async fn snapshot(&self) -> Value {
        serde_json::json!({
            "seats": self.scan(&self.tables.seats).await,
            "orders": self.scan(&self.tables.orders).await,
            "outbox": self.scan(&self.tables.outbox).await,
        })
    }

    /// Everything stored for this on-sale: the three tables ([`Self::snapshot`]) and every Redis
    /// key of the event with whether it is open ([`crate::event_state`]). The attack tests
    /// compare it before and after each attack. (The admission hash holds the admitter's token
    /// bucket, so an admit tick changes it; nothing else does.)
    pub async fn full_snapshot(&self) -> Value {
        serde_json::json!({
            "tables": self.snapshot().await,
            "redis": crate::event_state(&self.event).await,
        })
    }

    /// Whether the customer still has a live admission (released on payment).
    pub async fn is_admitted(&self, customer: &CustomerId) -> bool {
        matches!(
            self.queue
                .standing(&self.event, customer, self.clock.now())
                .await
                .expect("standing"),
            Some(lineup::application::ports::queue::Standing::Admitted { .. })
        )
    }

    pub async fn is_open(&self) -> bool {
        self.queue
            .open_events()
            .await
            .expect("open events")
            .contains(&self.event)
    }
}
