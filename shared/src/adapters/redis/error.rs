//! Redis errors as the application sees them: unavailable (worth a retry) or failed.

use crate::application::error::{LineupError, Store};

/// Connection trouble (refused, dropped, timed out, Redis loading or failing over, a cluster's
/// slots moving while a node is replaced) is worth a retry; any other Redis error is not.
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
                        | redis::ServerErrorKind::Moved
                        | redis::ServerErrorKind::Ask
                )
            );
        let source = Box::new(error);
        if transient {
            LineupError::Unavailable {
                store: Store::Queue,
                source,
            }
        } else {
            LineupError::Failed {
                store: Store::Queue,
                source,
            }
        }
    }
}
