//! Sending one webhook until the receiver answers, as a payment provider does: retried with a
//! doubling pause while it answers 5xx or not at all, for [`DELIVERY_PATIENCE`]. Shared by the
//! generic provider's webhook and the Stripe events.

use std::time::Duration;

use reqwest::StatusCode;

/// How long the provider keeps sending a webhook Lineup answers with a 5xx (or not at all).
/// Real providers keep at it for days (Stripe: three); ten minutes covers any local stall.
pub const DELIVERY_PATIENCE: Duration = Duration::from_secs(600);
/// The longest pause between two sendings (the pause doubles from half a second).
pub const LONGEST_PAUSE: Duration = Duration::from_secs(30);
/// The first pause.
const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// How a delivery ended.
#[derive(Debug)]
pub enum Delivered {
    /// The receiver answered with something other than a 5xx (its body, if JSON).
    Answered {
        status: StatusCode,
        answer: Option<serde_json::Value>,
    },
    /// Still 5xx or unreachable after [`DELIVERY_PATIENCE`].
    GaveUp,
}

/// Sends the request `build` makes (a fresh one per attempt: signed anew) until the receiver
/// gives an answer that is not a 5xx, or patience runs out. `attempted` is told of each attempt;
/// `what` names the webhook in the logs.
pub async fn until_answered(
    build: impl Fn() -> reqwest::RequestBuilder,
    mut attempted: impl FnMut(),
    what: &str,
) -> Delivered {
    let mut wait = FIRST_PAUSE;
    let first = tokio::time::Instant::now();
    for attempt in 1.. {
        let sent = build().send().await;
        attempted();
        match sent {
            Ok(reply) if !reply.status().is_server_error() => {
                let status = reply.status();
                let answer = reply.json::<serde_json::Value>().await.ok();
                return Delivered::Answered { status, answer };
            }
            Ok(reply) => {
                tracing::warn!(
                    webhook = what,
                    attempt,
                    status = reply.status().as_u16(),
                    "webhook got a 5xx; retrying"
                );
            }
            Err(send_error) => {
                tracing::warn!(webhook = what, attempt, error = %send_error, "webhook not delivered; retrying");
            }
        }
        if first.elapsed() + wait > DELIVERY_PATIENCE {
            break;
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(LONGEST_PAUSE);
    }
    tracing::error!(webhook = what, "webhook not delivered; given up");
    Delivered::GaveUp
}
