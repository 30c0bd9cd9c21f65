//! One simulated customer, start to finish, through the real routes: join, wait as the waiting
//! room has clients wait ([`super::waiting`]: the public status through the CDN, the draw for a
//! pre-queue number, one claim), shop once admitted (look at the map, hold, retry taken seats),
//! then pay, release, let the hold lapse or give up, as their persona says. What they saw is
//! kept for the report and for checking the stored data against it.

use std::collections::HashSet;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::RngExt;
use tokio::sync::watch;

use super::api_client::{Api, CallError, Confirmed, HoldAnswer, OrderView, PaymentView, Standing};
use super::persona::{think, AfterHold, OnAdmission, Persona};
use super::progress::LiveCounters;
use super::seat_choice::{choose_available, choose_popular};
use super::waiting::{WaitLog, Waited, Waiter};

/// How many holds a customer tries (the first and two retries with other seats).
const HOLD_TRIES: u32 = 3;
/// How many times a customer looks again at a map with nothing free before leaving.
const EMPTY_MAP_LOOKS: u32 = 5;
/// How often a paying customer refreshes the order page.
const ORDER_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What every customer shares.
pub struct Context {
    pub api: Arc<Api>,
    pub event: String,
    /// The venue's section names, in order.
    pub sections: Vec<String>,
    pub counters: Arc<LiveCounters>,
    /// The mean pause between a customer's steps.
    pub think: Duration,
    /// How long a hold lasts on this server (`/dev/info`'s `holdSeconds`).
    pub hold_duration: Duration,
    /// How long a payer waits for the order to show PAID before giving up on it.
    pub payment_timeout: Duration,
    /// Whether a customer read that the sale is over (sold out or closed); see [`Waiter`].
    pub sale_over: watch::Sender<bool>,
}

/// How a customer's visit ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The join got 409 `queue_closed`: the sale was over.
    TurnedAway,
    LeftWhileWaiting,
    VanishedWhileWaiting,
    /// The status (or a poll) said the sale was over (sold out or closed) while waiting.
    ClosedWhileWaiting,
    /// The claim said `expired`: the claim window had passed.
    AdmissionExpired,
    /// A poll answered 404 `queue_entry_not_found`.
    EntryLost,
    /// The status showed the number called, but claims kept answering `waiting`.
    PassedOver,
    /// Joined the pre-queue; the published draw did not list it, yet polls kept answering that
    /// it was still in the pre-queue.
    LeftOutOfDraw,
    LeftWhenAdmitted,
    VanishedWhenAdmitted,
    /// The map showed nothing free, again and again.
    NoSeatsLeft,
    /// Every hold tried was refused (seats taken).
    HoldsRefused,
    /// A hold got 403: the admission was over.
    AdmissionEnded,
    /// A hold got 409 `hold_exists` (the customer had no other hold open).
    HoldExists,
    Paid {
        order_id: String,
        seats: usize,
    },
    RefundRequired {
        order_id: String,
    },
    LetHoldLapse {
        order_id: String,
    },
    Released {
        order_id: String,
    },
    /// Released, but the server said the order was no longer pending.
    ReleaseRefused {
        order_id: String,
    },
    /// Paid after the hold lapsed, but the payment had been cancelled with it (the provider
    /// refused the confirm): no money taken.
    LatePaymentRefused {
        order_id: String,
    },
    /// Paid, but the order never showed a final status in time.
    PaymentUnconfirmed {
        order_id: String,
    },
    /// An answer the contract does not allow at that point (see `problem`).
    Failed,
}

impl Outcome {
    /// Gave up of their own accord (or left when nothing suitable was free).
    pub fn gave_up(&self) -> bool {
        matches!(
            self,
            Self::LeftWhileWaiting
                | Self::VanishedWhileWaiting
                | Self::LeftWhenAdmitted
                | Self::VanishedWhenAdmitted
                | Self::NoSeatsLeft
                | Self::HoldsRefused
        )
    }
}

/// An order whose final status the customer saw: PAID, REFUND_REQUIRED or REFUNDED on the order
/// page, or RELEASED when their release was accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenOrder {
    pub order_id: String,
    pub status: String,
    /// The order's seats, as the customer was shown them.
    pub seat_ids: Vec<String>,
}

impl SeenOrder {
    fn of(order: &OrderView) -> Self {
        Self {
            order_id: order.order_id.clone(),
            status: order.status.clone(),
            seat_ids: order.seat_ids.clone(),
        }
    }
}

/// What one customer did and saw.
#[derive(Debug)]
pub struct CustomerReport {
    pub customer_id: String,
    pub outcome: Outcome,
    pub joined: bool,
    pub admitted: bool,
    /// What the wait was like: the number, the ETAs given, the reads and claims.
    pub wait: WaitLog,
    pub holds_won: u32,
    pub holds_lost: u32,
    pub price_changes: u32,
    pub seen: Vec<SeenOrder>,
    pub problem: Option<CallError>,
    /// Arrival to the end of the visit.
    pub took: Duration,
}

/// Where the customer is, for the live counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Outside,
    Waiting,
    Shopping,
}

pub struct Customer {
    jwt: String,
    persona: Persona,
    rng: StdRng,
    context: Arc<Context>,
    stage: Stage,
    report: CustomerReport,
}

impl Customer {
    pub fn new(
        id: String,
        jwt: String,
        persona: Persona,
        rng: StdRng,
        context: Arc<Context>,
    ) -> Self {
        Self {
            report: CustomerReport {
                customer_id: id,
                outcome: Outcome::Failed,
                joined: false,
                admitted: false,
                wait: WaitLog::default(),
                holds_won: 0,
                holds_lost: 0,
                price_changes: 0,
                seen: Vec::new(),
                problem: None,
                took: Duration::ZERO,
            },
            jwt,
            persona,
            rng,
            context,
            stage: Stage::Outside,
        }
    }

    pub async fn run(mut self) -> CustomerReport {
        tokio::time::sleep(self.persona.arrival).await;
        let arrived = Instant::now();
        let outcome = match self.visit().await {
            Ok(outcome) => outcome,
            Err(problem) => {
                self.report.problem = Some(problem);
                Outcome::Failed
            }
        };
        self.enter(Stage::Outside);
        LiveCounters::bump(&self.context.counters.done);
        self.report.outcome = outcome;
        self.report.took = arrived.elapsed();
        self.report
    }

    fn enter(&mut self, stage: Stage) {
        let counter = |stage| -> Option<&AtomicI64> {
            match stage {
                Stage::Outside => None,
                Stage::Waiting => Some(&self.context.counters.waiting),
                Stage::Shopping => Some(&self.context.counters.shopping),
            }
        };
        if let Some(counter) = counter(self.stage) {
            LiveCounters::add(counter, -1);
        }
        if let Some(counter) = counter(stage) {
            LiveCounters::add(counter, 1);
        }
        self.stage = stage;
    }

    async fn pause(&mut self, mean: Duration) {
        let pause = think(&mut self.rng, mean);
        tokio::time::sleep(pause).await;
    }

    async fn visit(&mut self) -> Result<Outcome, CallError> {
        let context = Arc::clone(&self.context);
        let api = &context.api;
        let event = context.event.as_str();
        let joined_at = Instant::now();
        let standing = api.join(&self.jwt, event).await?;
        if standing == Standing::Closed {
            return Ok(Outcome::TurnedAway);
        }
        self.report.joined = true;
        if matches!(standing, Standing::Numbered(_) | Standing::PreQueue(_)) {
            self.enter(Stage::Waiting);
        }
        let mut waiter = Waiter {
            api,
            event,
            jwt: &self.jwt,
            patience: self.persona.patience,
            rng: &mut self.rng,
            sale_over: &context.sale_over,
            log: &mut self.report.wait,
        };
        let (queue_id, access_token) = match waiter.wait(standing, joined_at).await? {
            Waited::Admitted {
                queue_id,
                access_token,
            } => (queue_id, access_token),
            Waited::Over(outcome) => return Ok(outcome),
        };
        self.enter(Stage::Shopping);
        self.report.admitted = true;
        LiveCounters::bump(&context.counters.admitted);
        match self.persona.on_admission {
            OnAdmission::Shops => {}
            OnAdmission::Leaves => {
                self.pause(context.think).await;
                api.leave(&self.jwt, event, &queue_id).await?;
                return Ok(Outcome::LeftWhenAdmitted);
            }
            OnAdmission::Vanishes => return Ok(Outcome::VanishedWhenAdmitted),
        }
        let order = match self.hold_seats(&access_token).await? {
            Ok(order) => order,
            Err(outcome) => {
                if matches!(outcome, Outcome::NoSeatsLeft | Outcome::HoldsRefused) {
                    api.leave(&self.jwt, event, &queue_id).await?;
                }
                return Ok(outcome);
            }
        };
        // The hold lapses at most its duration from here (the server starts it before answering).
        let held_at = Instant::now();
        match self.persona.after_hold {
            AfterHold::Pay => {
                self.pause(context.think * 2).await;
                let payment = api.checkout(&self.jwt, &order).await?;
                self.pay(&order, &payment, &queue_id, false).await
            }
            AfterHold::PayLate => {
                // The payment form opened while the hold lived (checkout pays live holds only),
                // the card confirmed 0.5-2 s after the hold lapsed, as a tab left open would:
                // mostly before reconciliation's next run cancels the payment with the hold (it
                // then settles as any late payment: sold if the seats are still free, else
                // refunded), else after it (refused, no money taken).
                self.pause(context.think).await;
                let payment = api.checkout(&self.jwt, &order).await?;
                let late = Duration::from_millis(self.rng.random_range(500..2_000));
                tokio::time::sleep_until((held_at + context.hold_duration + late).into()).await;
                self.pay(&order, &payment, &queue_id, true).await
            }
            AfterHold::LetLapse => Ok(Outcome::LetHoldLapse {
                order_id: order.order_id,
            }),
            AfterHold::Release => {
                self.pause(context.think).await;
                let released = api.release(&self.jwt, event, &order.order_id).await?;
                if released {
                    self.report.seen.push(SeenOrder {
                        status: "RELEASED".to_owned(),
                        ..SeenOrder::of(&order)
                    });
                }
                api.leave(&self.jwt, event, &queue_id).await?;
                Ok(if released {
                    Outcome::Released {
                        order_id: order.order_id,
                    }
                } else {
                    Outcome::ReleaseRefused {
                        order_id: order.order_id,
                    }
                })
            }
        }
    }

    /// Looks at the map and holds seats, choosing others when some are taken. `Ok(Err(..))`:
    /// no hold, and why.
    async fn hold_seats(
        &mut self,
        access_token: &str,
    ) -> Result<Result<OrderView, Outcome>, CallError> {
        let context = Arc::clone(&self.context);
        let event = context.event.as_str();
        let mut avoid: HashSet<String> = HashSet::new();
        let mut tries = 0;
        let mut empty_looks = 0;
        loop {
            self.pause(context.think).await;
            let section = self.persona.section(&context.sections);
            let (pick, answer) = if tries == 0 && self.persona.best_available {
                let answer = context
                    .api
                    .hold_best_available(
                        &self.jwt,
                        access_token,
                        event,
                        section,
                        self.persona.party,
                    )
                    .await?;
                (Vec::new(), answer)
            } else {
                let map = context.api.seat_map(event).await?;
                let pick = if tries == 0 && self.persona.stale_map {
                    choose_popular(&map, self.persona.party, &mut self.rng)
                } else {
                    choose_available(&map, self.persona.party, section, &avoid, &mut self.rng)
                };
                if pick.is_empty() {
                    empty_looks += 1;
                    if empty_looks > EMPTY_MAP_LOOKS {
                        return Ok(Err(Outcome::NoSeatsLeft));
                    }
                    let wait = Duration::from_millis(self.rng.random_range(2_000..4_000));
                    tokio::time::sleep(wait).await;
                    continue;
                }
                let answer = context
                    .api
                    .hold(&self.jwt, access_token, event, &pick)
                    .await?;
                (pick, answer)
            };
            match answer {
                HoldAnswer::Held(order) => {
                    self.report.holds_won += 1;
                    LiveCounters::bump(&context.counters.holds_won);
                    return Ok(Ok(order));
                }
                HoldAnswer::Taken(seats) => {
                    self.report.holds_lost += 1;
                    LiveCounters::bump(&context.counters.holds_lost);
                    if seats.is_empty() {
                        avoid.extend(pick);
                    } else {
                        avoid.extend(seats);
                    }
                }
                HoldAnswer::PriceChanged => self.report.price_changes += 1,
                // Not that many together in the section: pick from the map instead.
                HoldAnswer::NoneTogether => {}
                HoldAnswer::HoldExists => return Ok(Err(Outcome::HoldExists)),
                HoldAnswer::AccessDenied => return Ok(Err(Outcome::AdmissionEnded)),
            }
            tries += 1;
            if tries >= HOLD_TRIES {
                return Ok(Err(Outcome::HoldsRefused));
            }
        }
    }

    /// Confirms checkout's payment at the provider, then refreshes the order until it is
    /// settled. A late payer's payment may have been cancelled with its lapsed hold
    /// (reconciliation cancels it before the seats go back): then no money was taken. An on-time
    /// payer's never is.
    async fn pay(
        &mut self,
        order: &OrderView,
        payment: &PaymentView,
        queue_id: &str,
        late: bool,
    ) -> Result<Outcome, CallError> {
        let context = Arc::clone(&self.context);
        match context.api.confirm(payment).await? {
            Confirmed::Paid => {}
            Confirmed::Refused if late => {
                context
                    .api
                    .leave(&self.jwt, &context.event, queue_id)
                    .await?;
                return Ok(Outcome::LatePaymentRefused {
                    order_id: order.order_id.clone(),
                });
            }
            Confirmed::Refused => {
                return Err(CallError::Inconsistent {
                    route: super::api_client::routes::PAY,
                    what: "an on-time payment was refused: cancelled while its hold lived",
                })
            }
        }
        let deadline = Instant::now() + context.payment_timeout;
        loop {
            tokio::time::sleep(ORDER_POLL_INTERVAL).await;
            let now = context.api.order(&self.jwt, &order.order_id).await?;
            match now.status.as_str() {
                "PAID" => {
                    self.report.seen.push(SeenOrder::of(&now));
                    LiveCounters::bump(&context.counters.orders_paid);
                    context.counters.seats_sold.fetch_add(
                        now.seat_ids.len() as u64,
                        std::sync::atomic::Ordering::Relaxed,
                    );
                    return Ok(Outcome::Paid {
                        order_id: now.order_id,
                        seats: now.seat_ids.len(),
                    });
                }
                // Refunded already: the refund queue's consumer can be quicker than a refresh.
                "REFUND_REQUIRED" | "REFUNDED" => {
                    self.report.seen.push(SeenOrder::of(&now));
                    // A refunded customer keeps the admission; this one goes home instead.
                    context
                        .api
                        .leave(&self.jwt, &context.event, queue_id)
                        .await?;
                    return Ok(Outcome::RefundRequired {
                        order_id: now.order_id,
                    });
                }
                _ if Instant::now() >= deadline => {
                    return Ok(Outcome::PaymentUnconfirmed {
                        order_id: order.order_id.clone(),
                    })
                }
                _ => {}
            }
        }
    }
}
