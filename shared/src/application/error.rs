//! The one error type of Lineup, and the one place that decides what each error means over HTTP.
//!
//! Adapters keep the underlying error as the `source` (never formatted into a string), so a log
//! line shows the whole chain while the client sees only a stable code and a human sentence.

use http::StatusCode;

use crate::domain::ids::InvalidId;
use crate::domain::webhook_signature::SignatureRefused;

use crate::domain::access_token::TokenRejection;
use crate::domain::proof_of_work::{ChallengeDifficulty, IssuedChallenge};

/// A join refused for want of the event's proof-of-work: 403 `challenge_required` (none sent)
/// or `challenge_invalid` (one sent, but forged, stale, another customer's or event's, or with
/// too few zero bits). The answer carries a fresh challenge, so no other route is needed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", if self.proof_offered {
    "this proof-of-work does not answer your current challenge; solve the challenge in this answer and join again"
} else {
    "joining this event needs a proof-of-work: solve the challenge in this answer and join again"
})]
pub struct ChallengeRefused {
    /// The leading zero bits the event asks for.
    pub difficulty: ChallengeDifficulty,
    /// Whether the request carried a proof at all.
    pub proof_offered: bool,
    /// The challenge to solve; the join handler fills it in (the queue store knows no key).
    pub fresh: Option<IssuedChallenge>,
}

/// Why a hold was refused: answers about the seats and the customer (409), not faults.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HoldRefused {
    /// Seats another customer holds or bought (named, so the page can grey them out).
    #[error("{} of the seats asked for are taken", .0.len())]
    SeatsUnavailable(Vec<String>),
    /// Seats set aside for a priority group the customer was not admitted through, until its
    /// window ends (named, so the page can grey them out).
    #[error("{} of the seats asked for are set aside for a presale until its window ends", .0.len())]
    SeatsReserved(Vec<String>),
    /// Seats whose price is not the one the caller's catalogue had (named).
    #[error("the price of some seats changed; look at the seat map again")]
    PriceChanged(Vec<String>),
    /// The customer already has an open hold for this event: `order_id` is it, so a client whose
    /// answer to the first hold was lost can find it, pay for it or release it.
    #[error("you already hold seats for this event; pay for them or release them first")]
    HoldExists {
        /// The open hold's order id; `None` when the store's refusal did not name it.
        order_id: Option<String>,
    },
    /// The seats of this hold, with those the customer already bought, pass the event's limit.
    #[error("this hold would take you past the event's limit of {limit} tickets per customer")]
    TicketLimitReached {
        /// The event's limit of tickets per customer.
        limit: u32,
    },
    /// Best available found no row of the section with that many available seats together.
    #[error("no row of {section} has {quantity} available seats together; ask for fewer, another section, or pick seats")]
    NoSeatsTogether {
        /// The section asked for.
        section: String,
        /// How many seats side by side were asked for.
        quantity: usize,
    },
}

/// Why a payment webhook was refused although it was signed: each is final for this request,
/// and none changes the order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaymentRefused {
    /// The signed body names another order than the path: a captured webhook replayed elsewhere.
    #[error("the payment names another order than the one in the path")]
    OrderMismatch,
    /// This payment already settled (or was refused for) another order.
    #[error("this payment was already presented for another order")]
    PaymentAlreadyUsed,
    /// The order was already settled by another payment: this payment is recorded for a refund.
    #[error("this order was already settled by another payment; this payment will be refunded")]
    OrderNotPayable,
    /// The Idempotency-Key came before with a different request.
    #[error("this Idempotency-Key was already used with another request")]
    IdempotencyKeyReused,
}

/// Any error an adapter keeps as the source of an [`LineupError::Unavailable`] or
/// [`LineupError::Failed`]: the store's own error, boxed, so the application never names it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The store an infrastructure error came from: named in the logs, never to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// The queue and the seat map (Redis).
    Queue,
    /// Seats, orders, payments and event records (DynamoDB).
    Seats,
    /// The ticket queue the outbox publishes to (SQS).
    TicketQueue,
    /// The secrets store (Secrets Manager).
    Secrets,
    /// The payment provider's API (Stripe).
    PaymentProvider,
}

impl std::fmt::Display for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Queue => "queue store",
            Self::Seats => "seat store",
            Self::TicketQueue => "ticket queue",
            Self::Secrets => "secrets store",
            Self::PaymentProvider => "payment provider",
        })
    }
}

/// Every way a request or an invocation can fail, whatever the function: one type, so one
/// mapping to HTTP ([`LineupError::status`], [`LineupError::code`]) serves every handler.
#[derive(Debug, thiserror::Error)]
pub enum LineupError {
    /// No verified customer on the request (no JWT `sub` claim, or an unusable one).
    #[error("this route needs a signed-in customer (a JWT with a `sub` claim)")]
    Unauthenticated,

    /// The request itself is malformed: bad ids, bad JSON, wrong headers.
    #[error("{message}")]
    InvalidRequest {
        /// The stable `error.code` of the 400 answer (e.g. `invalid_json`).
        code: &'static str,
        /// The sentence shown to the client.
        message: String,
    },

    /// The body is longer than the route takes: refused before it is parsed or hashed.
    #[error("the body is larger than this route takes ({limit} bytes at most)")]
    BodyTooLarge {
        /// The route's largest body, in bytes.
        limit: usize,
    },

    /// No such event (for the seat and layout routes: no seats seeded): 404. A join or poll that
    /// meets it from the queue first tries to re-load the event from DynamoDB.
    #[error("no on-sale event with this id")]
    EventNotFound,

    /// The queue entry is unknown, or is not the caller's (the two are not told apart).
    #[error("no queue entry with this id for this customer")]
    QueueEntryNotFound,

    /// No route of the function matches the request's method and path: 404.
    #[error("no route {method} {path}")]
    RouteNotFound {
        /// The request's HTTP method.
        method: String,
        /// The request's path.
        path: String,
    },

    /// The event's queue no longer takes customers (sold out or closed by an operator).
    #[error("the queue for this event is closed")]
    QueueClosed,

    /// The event is cancelled: nothing more is sold (no hold, no new payment); every payment
    /// taken is refunded.
    #[error("this event is cancelled: nothing more is sold, and every payment is refunded")]
    EventCancelled,

    /// The caller's JWT lacks the claim this deployment requires before joining (e.g. a
    /// verified e-mail address): bots on throwaway accounts cannot queue.
    #[error("joining needs a verified account: the `{claim}` claim of your sign-in must be true")]
    ClaimRequired {
        /// The name of the JWT claim that must be true.
        claim: String,
    },

    /// The event asks every new joiner for a proof-of-work and this join did not show enough.
    #[error(transparent)]
    ChallengeRefused(#[from] ChallengeRefused),

    /// The event admits only holders of an access code and the join carried none (nothing
    /// secret in the answer: the page asks for the code and joins again).
    #[error("joining this event needs an access code: enter yours and join again")]
    CodeRequired,

    /// The access code is not one that lets this account in: wrong, for another event, used up
    /// by other accounts, expired or revoked (one answer for all, so a guesser learns nothing).
    #[error("this access code does not let you in: check it, or ask whoever gave it to you")]
    CodeRefused,

    /// An access token that is missing, forged, expired, for another event or customer, or revoked.
    #[error("access token refused: {0}")]
    AccessDenied(#[from] TokenRejection),

    /// A store could not be reached, throttled us, or failed on its side (Redis not answering, a
    /// DynamoDB throttle, SQS unreachable). Safe to retry: nothing was changed, or the change is
    /// idempotent. The adapter decides which of its errors these are, and keeps the source.
    #[error("the {store} is unavailable")]
    Unavailable {
        /// The store that failed (logged, not shown).
        store: Store,
        /// The store's own error, kept for the log line.
        #[source]
        source: BoxError,
    },

    /// A store refused the operation for a reason retrying will not cure (a script error, a
    /// validation error, a missing table, an item not in the shape the adapter writes): a bug or
    /// a misconfiguration, reported as 500 and logged with its source.
    #[error("the {store} refused the operation")]
    Failed {
        /// The store that refused (logged, not shown).
        store: Store,
        /// The store's own error, kept for the log line.
        #[source]
        source: BoxError,
    },

    /// A hold refused for the seats or the customer: 409 with the reason's own code.
    #[error(transparent)]
    HoldRefused(#[from] HoldRefused),

    /// A signed payment webhook refused: 400 for `order_mismatch`, else 409.
    #[error(transparent)]
    PaymentRefused(#[from] PaymentRefused),

    /// The order is no longer pending (paid, expired or released), so it cannot be released.
    #[error("this order is no longer pending (paid, expired or released)")]
    OrderNotPending,

    /// The order's payment has gone too far to cancel (it succeeded, or the bank is taking it):
    /// the hold cannot be given back; the payment settles it (sold, or refunded) shortly.
    #[error(
        "this order's payment is being taken; it settles the order (sold, or refunded) shortly"
    )]
    PaymentInProgress,

    /// No such order (for a customer's route: none of theirs); the sentence is the message of
    /// the 404 `not_found`.
    #[error("{0}")]
    NotFound(&'static str),

    /// Seats the event does not have.
    #[error("this event has no seat {}", .0.join(", "))]
    UnknownSeats(Vec<String>),

    /// The payment webhook's signature is missing, wrong or stale.
    #[error("{0}")]
    BadSignature(&'static str),

    /// The payment does not match the order (amount or currency).
    #[error("{0}")]
    PaymentMismatch(String),

    /// A request reached the API without going through CloudFront.
    #[error("call the API through its public (CloudFront) address")]
    DirectAccessRefused,

    /// The seat availability is being rebuilt after a cache loss: the seat map and best
    /// available wait a few seconds (exact holds still work).
    #[error("seat availability is being rebuilt; try again in a few seconds")]
    AvailabilityRebuilding,

    /// The cache lost this event (a flush, a failover to an empty node) and it is being put
    /// back from its durable record: the customer's place is kept; retry shortly.
    #[error("the queue is being restored after an outage; your place is kept: try again in a few seconds")]
    CacheRecovering,

    /// The queue's durable range of numbers ran out and the next range is being reserved (by
    /// another request): nothing changed; retry shortly.
    #[error("the queue is busy handing out numbers; try again in a second")]
    NumbersExhausted {
        /// The caller took the duty to reserve the next range.
        top_up: bool,
    },

    /// The pre-queue draw is not published yet (or there is no such chunk).
    #[error("the draw is not published; it is, in the first seconds after opening")]
    DrawNotPublished,

    /// A queue script answered in a shape the adapter does not know: a bug, not bad input.
    #[error("the queue store gave an unexpected reply to `{operation}`: {reply}")]
    QueueReply {
        /// What the adapter was doing (e.g. `draw`, `layout summary`).
        operation: &'static str,
        /// The reply it could not read, or a short part of it.
        reply: String,
    },

    /// DynamoDB answered in a way the ledger never leads to (an item it did not write, a
    /// transaction cancelled on items it does not touch): a bug or a hand edit, not bad input.
    #[error("the seat store gave an unexpected reply to `{operation}`: {reply}")]
    SeatStoreReply {
        /// What the adapter was doing (e.g. `hold`, `seat status`).
        operation: &'static str,
        /// What DynamoDB answered, reduced to what may be logged (e.g. cancellation codes).
        reply: String,
    },
}

impl LineupError {
    /// An [`LineupError::InvalidRequest`] with its code and sentence.
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidRequest {
            code,
            message: message.into(),
        }
    }

    /// The HTTP status for this error: the single mapping every handler uses.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthenticated | Self::BadSignature(_) => StatusCode::UNAUTHORIZED,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::OrderNotPending | Self::HoldRefused(_) => StatusCode::CONFLICT,
            Self::PaymentRefused(PaymentRefused::OrderMismatch) => StatusCode::BAD_REQUEST,
            Self::PaymentRefused(_) => StatusCode::CONFLICT,
            Self::PaymentMismatch(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::Failed { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            Self::InvalidRequest { .. } | Self::UnknownSeats(_) => StatusCode::BAD_REQUEST,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::AccessDenied(_)
            | Self::ClaimRequired { .. }
            | Self::ChallengeRefused(_)
            | Self::CodeRequired
            | Self::CodeRefused
            | Self::DirectAccessRefused => StatusCode::FORBIDDEN,
            Self::EventNotFound
            | Self::QueueEntryNotFound
            | Self::RouteNotFound { .. }
            | Self::DrawNotPublished => StatusCode::NOT_FOUND,
            Self::QueueClosed | Self::EventCancelled | Self::PaymentInProgress => {
                StatusCode::CONFLICT
            }
            Self::AvailabilityRebuilding
            | Self::CacheRecovering
            | Self::NumbersExhausted { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::QueueReply { .. } | Self::SeatStoreReply { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// The stable, machine-readable `error.code` of the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unauthenticated => "unauthenticated",
            Self::BadSignature(_) => "invalid_signature",
            Self::NotFound(_) => "not_found",
            Self::UnknownSeats(_) => "unknown_seats",
            Self::OrderNotPending => "order_not_pending",
            Self::PaymentInProgress => "payment_in_progress",
            Self::HoldRefused(refused) => match refused {
                HoldRefused::SeatsUnavailable(_) => "seats_unavailable",
                HoldRefused::SeatsReserved(_) => "seats_reserved",
                HoldRefused::PriceChanged(_) => "price_changed",
                HoldRefused::HoldExists { .. } => "hold_exists",
                HoldRefused::TicketLimitReached { .. } => "ticket_limit_reached",
                HoldRefused::NoSeatsTogether { .. } => "no_seats_together",
            },
            Self::PaymentRefused(refused) => match refused {
                PaymentRefused::OrderMismatch => "order_mismatch",
                PaymentRefused::PaymentAlreadyUsed => "payment_already_used",
                PaymentRefused::OrderNotPayable => "order_not_payable",
                PaymentRefused::IdempotencyKeyReused => "idempotency_key_reused",
            },
            Self::PaymentMismatch(_) => "payment_mismatch",
            Self::Unavailable { .. } => "service_unavailable",
            Self::Failed { .. } => "internal_error",
            Self::InvalidRequest { code, .. } => code,
            Self::BodyTooLarge { .. } => "body_too_large",
            Self::EventNotFound => "event_not_found",
            Self::QueueEntryNotFound => "queue_entry_not_found",
            Self::RouteNotFound { .. } => "route_not_found",
            Self::QueueClosed => "queue_closed",
            Self::EventCancelled => "event_cancelled",
            Self::DrawNotPublished => "draw_not_published",
            Self::AvailabilityRebuilding => "availability_rebuilding",
            Self::CacheRecovering => "queue_recovering",
            Self::NumbersExhausted { .. } => "service_unavailable",
            Self::DirectAccessRefused => "direct_access_refused",
            Self::AccessDenied(_) => "access_denied",
            Self::ClaimRequired { .. } => "claim_required",
            Self::ChallengeRefused(refused) if refused.proof_offered => "challenge_invalid",
            Self::ChallengeRefused(_) => "challenge_required",
            Self::CodeRequired => "code_required",
            Self::CodeRefused => "code_invalid",
            Self::QueueReply { .. } | Self::SeatStoreReply { .. } => "internal_error",
        }
    }

    /// The sentence shown to the client. Infrastructure details stay in the logs.
    pub fn public_message(&self) -> String {
        match self {
            Self::Unavailable { .. } => {
                "the service is briefly unavailable; retry after the Retry-After delay".to_owned()
            }
            Self::Failed { .. } | Self::QueueReply { .. } | Self::SeatStoreReply { .. } => {
                "something went wrong on our side".to_owned()
            }
            // The reason (forged, expired, revoked...) goes to the logs, not to the caller.
            Self::AccessDenied(_) => {
                "the queue access token is missing, invalid or no longer valid; join the queue again"
                    .to_owned()
            }
            other => other.to_string(),
        }
    }

    /// The seats an error is about (taken ones for `seats_unavailable`, unknown ones for
    /// `unknown_seats`), shown to the client as `error.seatIds`.
    pub fn seat_ids(&self) -> Option<&[String]> {
        match self {
            Self::HoldRefused(
                HoldRefused::SeatsUnavailable(seat_ids)
                | HoldRefused::SeatsReserved(seat_ids)
                | HoldRefused::PriceChanged(seat_ids),
            ) => Some(seat_ids),
            Self::UnknownSeats(seat_ids) => Some(seat_ids),
            _ => None,
        }
    }

    /// The order an error is about (the open hold for `hold_exists`), shown as `error.orderId`.
    pub fn order_id(&self) -> Option<&str> {
        match self {
            Self::HoldRefused(HoldRefused::HoldExists { order_id }) => order_id.as_deref(),
            _ => None,
        }
    }

    /// The challenge a refused join should solve, shown as `error.challenge`,
    /// `error.difficulty` and `error.expiresAt`.
    pub fn challenge(&self) -> Option<&IssuedChallenge> {
        match self {
            Self::ChallengeRefused(refused) => refused.fresh.as_ref(),
            _ => None,
        }
    }

    /// Seconds a client should wait before retrying, for errors that are worth retrying.
    pub fn retry_after_seconds(&self) -> Option<u32> {
        match self {
            Self::Unavailable { .. } | Self::AvailabilityRebuilding | Self::CacheRecovering => {
                Some(2)
            }
            Self::NumbersExhausted { .. } => Some(1),
            _ => None,
        }
    }
}

/// A malformed id is a bad request; a missing customer id, a caller not signed in.
impl From<InvalidId> for LineupError {
    fn from(invalid: InvalidId) -> Self {
        match invalid {
            InvalidId::Malformed { code, message } => Self::InvalidRequest { code, message },
            InvalidId::NoCustomer => Self::Unauthenticated,
        }
    }
}

/// A refused signature is the caller's fault: 413 for a body too large to hash, else 401.
impl From<SignatureRefused> for LineupError {
    fn from(refused: SignatureRefused) -> Self {
        match refused {
            SignatureRefused::BodyTooLarge { limit } => Self::BodyTooLarge { limit },
            SignatureRefused::Invalid(reason) => Self::BadSignature(reason),
        }
    }
}

/// Lambda reports an error as a `Diagnostic`; its type is the error code, so CloudWatch can
/// count failures by kind.
impl From<LineupError> for lambda_runtime::Diagnostic {
    fn from(error: LineupError) -> Self {
        lambda_runtime::Diagnostic {
            error_type: error.code().to_owned(),
            error_message: error.to_string(),
        }
    }
}
