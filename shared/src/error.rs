//! The one error type of Lineup, and the one place that decides what each error means over HTTP.
//!
//! Adapters keep the underlying error as the `source` (never formatted into a string), so a log
//! line shows the whole chain while the client sees only a stable code and a human sentence.

use http::StatusCode;

use crate::access_token::TokenRejection;

#[derive(Debug, thiserror::Error)]
pub enum LineupError {
    /// No verified customer on the request (no JWT `sub` claim, or an unusable one).
    #[error("this route needs a signed-in customer (a JWT with a `sub` claim)")]
    Unauthenticated,

    /// The request itself is malformed: bad ids, bad JSON, wrong headers.
    #[error("{message}")]
    InvalidRequest { code: &'static str, message: String },

    #[error("no on-sale event with this id")]
    EventNotFound,

    /// The queue entry is unknown, or is not the caller's (the two are not told apart).
    #[error("no queue entry with this id for this customer")]
    QueueEntryNotFound,

    #[error("no route {method} {path}")]
    RouteNotFound { method: String, path: String },

    /// The event's queue no longer takes customers (sold out or closed by an operator).
    #[error("the queue for this event is closed")]
    QueueClosed,

    /// An access token that is missing, forged, expired, for another event or customer, or revoked.
    #[error("access token refused: {0}")]
    AccessDenied(#[from] TokenRejection),

    /// Redis could not be reached or did not answer in time. Safe to retry: nothing was changed,
    /// or the change is idempotent (joining twice keeps the place).
    #[error("the queue store is unavailable")]
    QueueUnavailable(#[source] redis::RedisError),

    /// Redis answered with an error that retrying will not cure (a script error, a wrong type):
    /// a bug or a misconfiguration, reported as 500 and logged with its source.
    #[error("the queue store refused the operation")]
    QueueFailure(#[source] redis::RedisError),

    /// A queue script answered in a shape the adapter does not know: a bug, not bad input.
    #[error("the queue store gave an unexpected reply to `{operation}`: {reply}")]
    UnexpectedReply {
        operation: &'static str,
        reply: String,
    },
}

impl LineupError {
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidRequest {
            code,
            message: message.into(),
        }
    }

    /// The HTTP status for this error: the single mapping every handler uses.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::InvalidRequest { .. } => StatusCode::BAD_REQUEST,
            Self::AccessDenied(_) => StatusCode::FORBIDDEN,
            Self::EventNotFound | Self::QueueEntryNotFound | Self::RouteNotFound { .. } => {
                StatusCode::NOT_FOUND
            }
            Self::QueueClosed => StatusCode::CONFLICT,
            Self::QueueUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::QueueFailure(_) | Self::UnexpectedReply { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// The stable, machine-readable `error.code` of the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unauthenticated => "unauthenticated",
            Self::InvalidRequest { code, .. } => code,
            Self::EventNotFound => "event_not_found",
            Self::QueueEntryNotFound => "queue_entry_not_found",
            Self::RouteNotFound { .. } => "route_not_found",
            Self::QueueClosed => "queue_closed",
            Self::AccessDenied(_) => "access_denied",
            Self::QueueUnavailable(_) => "service_unavailable",
            Self::QueueFailure(_) | Self::UnexpectedReply { .. } => "internal_error",
        }
    }

    /// The sentence shown to the client. Infrastructure details stay in the logs.
    pub fn public_message(&self) -> String {
        match self {
            Self::QueueUnavailable(_) => {
                "the queue is briefly unavailable; retry after the Retry-After delay".to_owned()
            }
            Self::QueueFailure(_) | Self::UnexpectedReply { .. } => {
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

    /// Seconds a client should wait before retrying, for errors that are worth retrying.
    pub fn retry_after_seconds(&self) -> Option<u32> {
        match self {
            Self::QueueUnavailable(_) => Some(2),
            _ => None,
        }
    }
}

/// Connection trouble (refused, dropped, timed out, Redis loading or failing over) is worth a
/// retry; any other Redis error is not.
impl From<redis::RedisError> for LineupError {
    fn from(error: redis::RedisError) -> Self {
        let transient = error.is_io_error()
            || error.is_timeout()
            || error.is_connection_refusal()
            || error.is_connection_dropped()
            || matches!(
                error.kind(),
                redis::ErrorKind::Server(
                    redis::ServerErrorKind::BusyLoading
                        | redis::ServerErrorKind::TryAgain
                        | redis::ServerErrorKind::ClusterDown
                        | redis::ServerErrorKind::MasterDown
                        | redis::ServerErrorKind::ReadOnly
                )
            );
        if transient {
            Self::QueueUnavailable(error)
        } else {
            Self::QueueFailure(error)
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
