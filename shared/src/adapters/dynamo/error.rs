//! DynamoDB errors as the application sees them: unavailable (worth a retry) or failed.

use crate::application::error::{LineupError, Store};

/// Throttling, server-side faults and failures to get a response at all are worth a retry;
/// validation errors and missing tables are not. Conditional failures never arrive here: the
/// adapters turn them into domain answers (409) first.
impl From<aws_sdk_dynamodb::Error> for LineupError {
    fn from(error: aws_sdk_dynamodb::Error) -> Self {
        use aws_sdk_dynamodb::error::ProvideErrorMetadata;
        use aws_sdk_dynamodb::Error as E;
        let retryable = match &error {
            E::ProvisionedThroughputExceededException(_)
            | E::RequestLimitExceeded(_)
            | E::InternalServerError(_)
            | E::TransactionConflictException(_)
            | E::TransactionInProgressException(_) => true,
            // No service error code: the request never got an answer (timeout, connection).
            other => matches!(other.code(), None | Some("ThrottlingException")),
        };
        if retryable {
            unavailable(error)
        } else {
            LineupError::Failed {
                store: Store::Seats,
                source: Box::new(error),
            }
        }
    }
}

/// A DynamoDB error worth a retry, whatever its kind (a transaction cancelled for throttling).
pub fn unavailable(error: aws_sdk_dynamodb::Error) -> LineupError {
    LineupError::Unavailable {
        store: Store::Seats,
        source: Box::new(error),
    }
}

/// An item not in the shape the adapter writes: a bug or a hand edit.
pub fn malformed(error: serde_dynamo::Error) -> LineupError {
    LineupError::Failed {
        store: Store::Seats,
        source: Box::new(error),
    }
}
