//! `lineup dev --payments stripe`: checkout, reconciliation and refunds pay through localstripe (a
//! Stripe stand-in from PyPI, started by [`crate::local_stack`] on a loopback port) with the
//! Stripe adapter, instead of through the dev server's own provider ([`super::payment_provider`]).
//! This module is what the dev server needs besides: localstripe's events sent to its
//! `POST /webhooks/stripe`, and the page's payment made the way localstripe takes it.
//!
//! - Webhooks ([`register_webhook`]): localstripe has no `/v1/webhook_endpoints` and no secret of
//!   its own. An endpoint is registered through its `POST /_config/webhooks/{id}` with a URL and
//!   the secret to sign with; the dev server registers its own `/webhooks/stripe` with its Stripe
//!   webhook secret (the one its confirm function verifies with), for the PaymentIntent events
//!   localstripe sends: `payment_intent.succeeded` and `payment_intent.payment_failed`. It sends
//!   each once, about a second after the change, and never again (no retries).
//! - The page ([`router`]): it confirms at `POST /v1/payment_intents/{id}/confirm` on the dev
//!   server's origin as Stripe.js does, with the publishable key, the client secret and
//!   `payment_method`. localstripe refuses that request as it stands (a publishable key is
//!   not accepted there; a `payment_method` on confirm is "Not implemented"; the client secret is
//!   an unexpected parameter), so the dev server serves that one route itself: it checks the
//!   key and the client secret against the PaymentIntent at localstripe, then makes what
//!   localstripe accepts with the secret key (the payment method set by an update, then a confirm
//!   with no body) and answers what localstripe answered. Any other `/v1/...` request gets
//!   Stripe's 404 naming localstripe's own address, where Stripe's API is.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use axum::{Json, Router};
use lineup::adapters::stripe::http_client;
use serde_json::{Map, Value};

use super::payment_provider::auth::{caller, Caller};
use super::payment_provider::errors::StripeError;
use super::payment_provider::params::Params;

/// The port `lineup dev --payments stripe` starts localstripe on (localstripe's own default).
pub const LOCAL_STRIPE_PORT: u16 = 8420;

/// The name the dev server's webhook endpoint is registered under at localstripe (one per
/// localstripe, which starts empty every run).
pub const WEBHOOK_ID: &str = "lineup-dev";

/// The events localstripe sends about PaymentIntents (it sends no `payment_intent.canceled`,
/// `processing` or `requires_action`, and no `refund.*`).
pub const WEBHOOK_EVENTS: &[&str] = &["payment_intent.succeeded", "payment_intent.payment_failed"];

#[derive(Debug, thiserror::Error)]
pub enum LocalstripeError {
    #[error("could not make the HTTP client for localstripe")]
    HttpClient(#[source] reqwest::Error),
    #[error("localstripe at {base} did not answer")]
    Unreachable {
        base: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("localstripe at {base} refused the webhook endpoint ({status}): {body}")]
    Refused {
        base: String,
        status: u16,
        body: String,
    },
}

/// Registers `{dev_base}/webhooks/stripe` at localstripe (`base`), signed with `secret`, for
/// [`WEBHOOK_EVENTS`].
pub async fn register_webhook(
    base: &str,
    dev_base: &str,
    secret: &str,
) -> Result<(), LocalstripeError> {
    let http = http_client().map_err(LocalstripeError::HttpClient)?;
    let mut form = vec![
        ("url", format!("{dev_base}/webhooks/stripe")),
        ("secret", secret.to_owned()),
    ];
    form.extend(
        WEBHOOK_EVENTS
            .iter()
            .map(|kind| ("events[]", (*kind).to_owned())),
    );
    let answer = http
        .post(format!("{base}/_config/webhooks/{WEBHOOK_ID}"))
        .form(&form)
        .send()
        .await
        .map_err(|source| LocalstripeError::Unreachable {
            base: base.to_owned(),
            source,
        })?;
    let status = answer.status();
    if status.is_success() {
        return Ok(());
    }
    Err(LocalstripeError::Refused {
        base: base.to_owned(),
        status: status.as_u16(),
        body: answer.text().await.unwrap_or_default(),
    })
}

/// localstripe, as the dev server's routes call it: its base and a secret test key (any
/// `sk_test_` key does for localstripe).
struct Relay {
    base: String,
    secret_key: String,
    http: reqwest::Client,
}

/// The routes the dev server serves with `--payments stripe`: the page's confirm, relayed as
/// localstripe takes it; Stripe's 404 for the rest of `/v1`; and a 404 for `/dev/payments...`,
/// which are the built-in provider's.
pub fn router(base: String, secret_key: &str) -> Result<Router, LocalstripeError> {
    let relay = Arc::new(Relay {
        base,
        secret_key: secret_key.to_owned(),
        http: http_client().map_err(LocalstripeError::HttpClient)?,
    });
    let elsewhere = {
        let base = relay.base.clone();
        move |method: Method, OriginalUri(uri): OriginalUri| async move {
            stripe_answer(&StripeError {
                status: StatusCode::NOT_FOUND,
                ..StripeError::invalid_without_code(format!(
                    "Unrecognized request URL ({method}: {}). With --payments stripe, Stripe's API \
                     is localstripe's, at {base}; this server relays only the browser's \
                     POST /v1/payment_intents/{{id}}/confirm.",
                    uri.path()
                ))
            })
        }
    };
    let built_in_only = || async {
        super::api_gateway::error(
            StatusCode::NOT_FOUND,
            "route_not_found",
            "/dev/payments is lineup dev's own payment provider's (--payments dev); with \
             --payments stripe the payments are localstripe's",
        )
    };
    Ok(Router::new()
        .route("/v1/payment_intents/{id}/confirm", post(confirm))
        .route("/v1/{*rest}", any(elsewhere))
        .route("/dev/payments", any(built_in_only))
        .route("/dev/payments/{*rest}", any(built_in_only))
        .with_state(relay))
}

/// Stripe's error answer.
fn stripe_answer(error: &StripeError) -> Response {
    (error.status, Json(error.body())).into_response()
}

/// `POST /v1/payment_intents/{id}/confirm` from the page (or `lineup simulate`), as Stripe.js
/// sends it: made at localstripe as localstripe takes it.
async fn confirm(
    State(relay): State<Arc<Relay>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match relay.confirm(&id, &headers, &body).await {
        Ok((status, answer)) => (status, Json(answer)).into_response(),
        Err(error) => stripe_answer(&error),
    }
}

/// What localstripe answered: its status and its JSON.
type Answer = (StatusCode, Value);

impl Relay {
    async fn confirm(
        &self,
        id: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Answer, StripeError> {
        let mut params = Params::decode(body)?;
        let caller = caller(headers, &mut params)?;
        let payment_method = params.take("payment_method");
        let client_secret = params.take("client_secret");
        params.finish("payment_method, client_secret")?;
        // The id goes into localstripe's path: a PaymentIntent's id, nothing that could name
        // another route there.
        let well_formed = id.strip_prefix("pi_").is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric())
        });
        if !well_formed {
            return Err(StripeError::missing("payment_intent", id));
        }
        let url = format!("{}/v1/payment_intents/{id}", self.base);

        match (caller, client_secret) {
            (Caller::Publishable, None) => {
                return Err(StripeError::invalid(
                    "parameter_missing",
                    "A publishable key must give the PaymentIntent's client_secret.",
                )
                .with_param("client_secret"))
            }
            (_, Some(client_secret)) => {
                let (status, intent) = self.call(self.http.get(&url)).await?;
                if status != StatusCode::OK {
                    return Ok((status, intent));
                }
                if intent.get("client_secret").and_then(Value::as_str) != Some(&client_secret) {
                    return Err(StripeError::invalid(
                        "payment_intent_invalid_parameter",
                        "The client_secret provided does not match the client_secret associated \
                         with the PaymentIntent.",
                    )
                    .with_param("client_secret"));
                }
            }
            (Caller::Secret, None) => {}
        }
        if let Some(payment_method) = payment_method {
            let (status, answer) = self
                .call(
                    self.http
                        .post(&url)
                        .form(&[("payment_method", payment_method)]),
                )
                .await?;
            if status != StatusCode::OK {
                return Ok((status, answer));
            }
        }
        self.call(self.http.post(format!("{url}/confirm"))).await
    }

    /// One call to localstripe with the secret key: its status and JSON, or a 502 in Stripe's
    /// shape when it does not answer with JSON.
    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Answer, StripeError> {
        let unavailable = |message: String| StripeError {
            status: StatusCode::BAD_GATEWAY,
            kind: "api_error",
            code: None,
            message,
            param: None,
            extra: Map::new(),
        };
        let answer = request
            .bearer_auth(&self.secret_key)
            .send()
            .await
            .map_err(|error| {
                unavailable(format!(
                    "localstripe at {} did not answer: {error}",
                    self.base
                ))
            })?;
        let status =
            StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        let json = answer.json::<Value>().await.map_err(|error| {
            unavailable(format!(
                "localstripe at {} answered {status} without JSON: {error}",
                self.base
            ))
        })?;
        Ok((status, json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A relay to a port nothing answers on: what it refuses, it refuses before calling.
    fn relay() -> Relay {
        Relay {
            base: "http://127.0.0.1:9".to_owned(),
            secret_key: "sk_test_relay".to_owned(),
            http: http_client().unwrap(),
        }
    }

    fn publishable() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", "Bearer pk_test_page".parse().unwrap());
        headers
    }

    #[tokio::test]
    async fn the_browser_s_confirm_is_checked_before_localstripe_is_called() {
        let relay = relay();
        let refused = |body: &'static str, id: &'static str, headers: HeaderMap| {
            let relay = &relay;
            async move {
                relay
                    .confirm(id, &headers, body.as_bytes())
                    .await
                    .unwrap_err()
            }
        };
        let no_secret = refused("payment_method=pm_card_visa", "pi_1", publishable()).await;
        assert_eq!(no_secret.status, StatusCode::BAD_REQUEST);
        assert_eq!(no_secret.param.as_deref(), Some("client_secret"));
        for id in ["pi_", "ch_1", "pi_1/cancel", "pi_1?x=1"] {
            let error = refused("client_secret=s", id, publishable()).await;
            assert_eq!(error.status, StatusCode::NOT_FOUND, "{id}");
        }
        let unknown = refused("client_secret=s&return_url=x", "pi_1", publishable()).await;
        assert_eq!(unknown.param.as_deref(), Some("return_url"));
        let no_key = refused("client_secret=s", "pi_1", HeaderMap::new()).await;
        assert_eq!(no_key.status, StatusCode::UNAUTHORIZED);
        // Past the checks, a localstripe that does not answer is Stripe's 502 `api_error`.
        let down = refused("client_secret=s", "pi_1", publishable()).await;
        assert_eq!(
            (down.status, down.kind),
            (StatusCode::BAD_GATEWAY, "api_error")
        );
    }

    #[test]
    fn the_webhook_covers_the_payment_intent_events_localstripe_sends() {
        assert!(WEBHOOK_EVENTS.contains(&"payment_intent.succeeded"));
        assert!(WEBHOOK_EVENTS
            .iter()
            .all(|kind| kind.starts_with("payment_intent.")));
    }
}
