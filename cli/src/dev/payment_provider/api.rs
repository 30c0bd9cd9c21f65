//! Stripe's REST API over the provider's books ([`super::state`]), for the part Lineup uses, so
//! `lineup::adapters::stripe::StripeProvider` pointed at `lineup dev` works unchanged: form
//! bodies, `Authorization: Bearer sk_test_...` (a `pk_test_...` key with the client secret where
//! Stripe.js uses one), `Idempotency-Key` honoured, Stripe's JSON and error shapes. Parameters it
//! does not implement are refused by name rather than ignored.

use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use lineup::adapters::stripe::API_VERSION;
use serde_json::Value;

use super::auth::{caller, Caller};
use super::errors::StripeError;
use super::idempotency::{self, Lookup};
use super::params::{one_of, read_new_intent, read_new_refund, Params};
use super::state::{new_id, public_view, Books, Reply};
use super::webhooks::Cause;
use super::PaymentProvider;

/// Stripe's largest page of a list.
const MAX_PAGE: usize = 100;
const DEFAULT_PAGE: usize = 10;

/// The routes under `/v1`.
pub fn routes() -> Router<PaymentProvider> {
    Router::new()
        .route("/payment_intents", post(create_payment_intent))
        .route(
            "/payment_intents/{id}",
            get(retrieve_payment_intent).post(update_payment_intent),
        )
        .route(
            "/payment_intents/{id}/confirm",
            post(confirm_payment_intent),
        )
        .route("/payment_intents/{id}/cancel", post(cancel_payment_intent))
        .route("/refunds", post(create_refund).get(list_refunds))
        .route("/refunds/{id}", get(retrieve_refund))
        .fallback(unrecognized)
        .method_not_allowed_fallback(unrecognized)
}

/// A route Stripe has not (or the dev provider does not serve): Stripe's 404.
async fn unrecognized(method: Method, OriginalUri(uri): OriginalUri) -> Response {
    respond(
        Reply::from(StripeError::unrecognized(method.as_str(), uri.path())),
        None,
        false,
    )
}

/// One request, as the API reads it.
struct Request<'a> {
    method: &'static str,
    path: String,
    headers: &'a HeaderMap,
    raw: &'a [u8],
    /// Whether a publishable key may make it (with the PaymentIntent's client secret).
    publishable: bool,
    /// The PaymentIntent the path names, whose client secret a publishable key must show.
    payment_intent: Option<&'a str>,
}

/// Stripe's answer, as HTTP: the JSON, `Request-Id`, `Stripe-Version`, and
/// `Idempotent-Replayed` on a replay.
fn respond(reply: Reply, request_id: Option<&str>, replayed: bool) -> Response {
    let mut response = (reply.status, Json(reply.body)).into_response();
    let headers = response.headers_mut();
    if let Some(id) = request_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        headers.insert("request-id", id);
    }
    headers.insert("stripe-version", HeaderValue::from_static(API_VERSION));
    if replayed {
        headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

impl PaymentProvider {
    /// Reads, authenticates and runs one request under its idempotency key, then sets going
    /// what it caused (events, later steps) and answers.
    fn answer<T>(
        &self,
        request: Request<'_>,
        read: impl FnOnce(Params) -> Result<T, StripeError>,
        run: impl FnOnce(&mut Books, T, SystemTime) -> Result<Reply, StripeError>,
    ) -> Response {
        let request_id = new_id("req");
        let refuse = |error: StripeError| respond(Reply::from(error), Some(&request_id), false);
        let mut params = match Params::decode(request.raw) {
            Ok(params) => params,
            Err(error) => return refuse(error),
        };
        let caller = match caller(request.headers, &mut params) {
            Ok(caller) => caller,
            Err(error) => return refuse(error),
        };
        let public = caller == Caller::Publishable;
        if public && !request.publishable {
            return refuse(StripeError {
                status: StatusCode::UNAUTHORIZED,
                code: Some("secret_key_required"),
                ..StripeError::unauthorized(
                    "This API call cannot be made with a publishable API key. Please use a \
                     secret API key (sk_test_...).",
                )
            });
        }
        let digest = idempotency::request_digest(request.method, &request.path, &params.0);
        let client_secret = params.take("client_secret");
        if public && client_secret.is_none() {
            return refuse(
                StripeError::invalid(
                    "parameter_missing",
                    "A publishable key must give the PaymentIntent's client_secret.",
                )
                .with_param("client_secret"),
            );
        }
        let typed = match read(params) {
            Ok(typed) => typed,
            Err(error) => return refuse(error),
        };
        let key = if request.method == "POST" {
            request
                .headers
                .get("idempotency-key")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        } else {
            None
        };
        if let Some(key) = &key {
            if let Err(error) = idempotency::check_key(key) {
                return refuse(error);
            }
        }
        let (reply, replayed) = {
            let mut desk = self.desk();
            let lookup = match &key {
                Some(key) => desk.keys.lookup(key, &digest),
                None => Lookup::New,
            };
            match lookup {
                Lookup::Replay(status, body) => (
                    Reply {
                        status,
                        body,
                        effects: Vec::new(),
                    },
                    true,
                ),
                Lookup::Mismatch(error) => (Reply::from(error), false),
                Lookup::New => {
                    let checked = match (request.payment_intent, &client_secret) {
                        (Some(id), Some(secret)) => desk.books.check_client_secret(id, secret),
                        _ => Ok(()),
                    };
                    let reply = match checked
                        .and_then(|()| run(&mut desk.books, typed, SystemTime::now()))
                    {
                        Ok(reply) => reply,
                        Err(error) => Reply::from(error),
                    };
                    if let Some(key) = &key {
                        desk.keys
                            .save(key, digest, reply.status, reply.body.clone());
                    }
                    (reply, false)
                }
            }
        };
        let cause = Cause {
            request_id: Some(request_id.clone()),
            idempotency_key: key,
        };
        let Reply {
            status,
            body,
            effects,
        } = reply;
        self.carry_out(effects, &cause);
        let body: Value = if public { public_view(body) } else { body };
        respond(
            Reply {
                status,
                body,
                effects: Vec::new(),
            },
            Some(&request_id),
            replayed,
        )
    }
}

/// `POST /v1/payment_intents`.
async fn create_payment_intent(
    State(provider): State<PaymentProvider>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = Request {
        method: "POST",
        path: "/v1/payment_intents".into(),
        headers: &headers,
        raw: &body,
        publishable: false,
        payment_intent: None,
    };
    provider.answer(request, read_new_intent, |books, new, now| {
        books.create(new, now)
    })
}

/// `GET /v1/payment_intents/{id}` (with a publishable key: and `client_secret`).
async fn retrieve_payment_intent(
    State(provider): State<PaymentProvider>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.unwrap_or_default();
    let request = Request {
        method: "GET",
        path: format!("/v1/payment_intents/{id}"),
        headers: &headers,
        raw: query.as_bytes(),
        publishable: true,
        payment_intent: Some(&id),
    };
    provider.answer(
        request,
        |params| params.finish("client_secret (with a publishable key)"),
        |books, (), _| books.retrieve(&id),
    )
}

/// `POST /v1/payment_intents/{id}`: `payment_method`, `metadata[...]`, `description`.
async fn update_payment_intent(
    State(provider): State<PaymentProvider>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = Request {
        method: "POST",
        path: format!("/v1/payment_intents/{id}"),
        headers: &headers,
        raw: &body,
        publishable: false,
        payment_intent: None,
    };
    provider.answer(
        request,
        |mut params| {
            let update = (
                params.take("payment_method"),
                params.take_indexed("metadata"),
                params.take("description"),
            );
            params.finish("payment_method, metadata[...], description")?;
            Ok(update)
        },
        |books, (method, metadata, description), _| {
            books.update(&id, method, &metadata, description)
        },
    )
}

/// `POST /v1/payment_intents/{id}/confirm`: with the payment method given or attached; with a
/// publishable key and the client secret as Stripe.js confirms.
async fn confirm_payment_intent(
    State(provider): State<PaymentProvider>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = Request {
        method: "POST",
        path: format!("/v1/payment_intents/{id}/confirm"),
        headers: &headers,
        raw: &body,
        publishable: true,
        payment_intent: Some(&id),
    };
    provider.answer(
        request,
        |mut params| {
            let method = params.take("payment_method");
            // What Stripe.js sends besides, of no consequence here.
            for ignored in [
                "return_url",
                "use_stripe_sdk",
                "expected_payment_method_type",
            ] {
                params.take(ignored);
            }
            params.finish(
                "payment_method, client_secret, return_url, use_stripe_sdk, \
                 expected_payment_method_type",
            )?;
            Ok(method)
        },
        |books, method, _| books.confirm(&id, method),
    )
}

/// `POST /v1/payment_intents/{id}/cancel`.
async fn cancel_payment_intent(
    State(provider): State<PaymentProvider>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = Request {
        method: "POST",
        path: format!("/v1/payment_intents/{id}/cancel"),
        headers: &headers,
        raw: &body,
        publishable: false,
        payment_intent: None,
    };
    provider.answer(
        request,
        |mut params| {
            let reason = one_of(
                params.take("cancellation_reason"),
                "cancellation_reason",
                &[
                    "duplicate",
                    "fraudulent",
                    "requested_by_customer",
                    "abandoned",
                ],
            )?;
            params.finish("cancellation_reason")?;
            Ok(reason)
        },
        |books, reason, now| books.cancel(&id, reason, now),
    )
}

/// `POST /v1/refunds`.
async fn create_refund(
    State(provider): State<PaymentProvider>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = Request {
        method: "POST",
        path: "/v1/refunds".into(),
        headers: &headers,
        raw: &body,
        publishable: false,
        payment_intent: None,
    };
    provider.answer(request, read_new_refund, |books, new, now| {
        books.refund(new, now)
    })
}

/// `GET /v1/refunds/{id}`.
async fn retrieve_refund(
    State(provider): State<PaymentProvider>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.unwrap_or_default();
    let request = Request {
        method: "GET",
        path: format!("/v1/refunds/{id}"),
        headers: &headers,
        raw: query.as_bytes(),
        publishable: false,
        payment_intent: None,
    };
    provider.answer(
        request,
        |params| params.finish("no parameters"),
        |books, (), _| books.refund_of(&id),
    )
}

/// `GET /v1/refunds?payment_intent=..&limit=..&starting_after=..`.
async fn list_refunds(
    State(provider): State<PaymentProvider>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.unwrap_or_default();
    let request = Request {
        method: "GET",
        path: "/v1/refunds".into(),
        headers: &headers,
        raw: query.as_bytes(),
        publishable: false,
        payment_intent: None,
    };
    provider.answer(
        request,
        |mut params| {
            let limit = match params.take("limit") {
                None => DEFAULT_PAGE,
                Some(raw) => raw
                    .parse::<usize>()
                    .ok()
                    .filter(|limit| (1..=MAX_PAGE).contains(limit))
                    .ok_or_else(|| {
                        StripeError::invalid_without_code(format!(
                            "Invalid limit: must be an integer from 1 to {MAX_PAGE}"
                        ))
                        .with_param("limit")
                    })?,
            };
            let listing = (
                params.take("payment_intent"),
                limit,
                params.take("starting_after"),
            );
            params.finish("payment_intent, limit, starting_after")?;
            Ok(listing)
        },
        |books, (payment_intent, limit, starting_after), _| {
            books.list_refunds(payment_intent.as_deref(), limit, starting_after.as_deref())
        },
    )
}
