//! The Stripe adapter of [`PaymentProvider`]: Stripe's REST API over HTTPS (rustls with ring),
//! with no Stripe SDK. Lineup needs five calls (create, fetch and cancel a PaymentIntent, make
//! and list refunds); an SDK would bring its own HTTP stack and TLS, and, through it, the
//! aws-lc crypto library the workspace keeps out of every binary. The same adapter serves
//! localstripe (the stand-in CI runs, at `STRIPE_API_BASE`) and Stripe itself.
//!
//! - Every request carries `Authorization: Bearer <key>` and `Stripe-Version: `[`API_VERSION`];
//!   bodies are form-encoded (`metadata[key]=value`, `payment_method_types[]=card`).
//! - Every POST carries an `Idempotency-Key` derived from Lineup's own records, so a call the
//!   caller retries makes one payment, one refund: the payment's
//!   [`NewPayment::idempotency_key`], the refund's [`NewRefund::refund_id`], and
//!   `lineup-cancel-<payment id>` for a cancellation. The adapter itself never retries.
//! - Amounts cross in Stripe's unit ([`crate::domain::money`]); answers are read leniently ([`wire`]).
//! - What a retry may cure (no connection, a timeout, 409, 429, 5xx) is
//!   [`LineupError::Unavailable`] (503 with `Retry-After`); anything else (other 4xx, an answer
//!   Lineup cannot read, an amount Stripe cannot take) is [`LineupError::Failed`]. The source is
//!   a [`StripeCallError`] in both.
//! - Neither the API key nor a payment's client secret is ever logged or in a `Debug` output.

pub mod wire;

use async_trait::async_trait;
use reqwest::{RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;

use self::wire::{AnswerError, List, PaymentIntent, Refund, StripeError};
use crate::application::error::{LineupError, Store};
use crate::application::ports::payments::{
    metadata_keys, Cancellation, NewPayment, NewRefund, PaymentProvider, PaymentStatus,
    ProviderPayment, ProviderRefund, PROVIDER_TIMEOUT,
};
use crate::domain::ids::PaymentId;
use crate::domain::keys::SecretKey;
use crate::domain::money::{self as amounts, AmountError};

/// The Stripe API version this adapter is written against (sent as `Stripe-Version` on every
/// request, so the account's default version cannot change the answers under it).
pub const API_VERSION: &str = "2024-06-20";

/// Stripe's limits on metadata: a key's length and a value's, in characters.
const METADATA_KEY_LIMIT: usize = 40;
const METADATA_VALUE_LIMIT: usize = 500;

/// Refunds asked for per page when listing a payment's refunds (Stripe's largest page).
const REFUNDS_PAGE: u32 = 100;

/// A Stripe secret (`sk_...`) or restricted (`rk_...`) API key. Never printed.
#[derive(Clone)]
pub struct StripeApiKey(String);

/// A string that cannot be an API key: not `sk_...` or `rk_...` (the stack's placeholder, before
/// an operator puts the real key), or with characters a header cannot carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a Stripe API key starts with sk_ or rk_ and is visible ASCII characters")]
pub struct InvalidApiKey;

impl StripeApiKey {
    /// The key, if it is a secret or restricted key that can be sent in a header.
    pub fn new(key: impl Into<String>) -> Result<Self, InvalidApiKey> {
        let key = key.into();
        let kind_known = key.starts_with("sk_") || key.starts_with("rk_");
        if kind_known && key.len() > 3 && key.bytes().all(|b| b.is_ascii_graphic()) {
            Ok(Self(key))
        } else {
            Err(InvalidApiKey)
        }
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for StripeApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StripeApiKey(<redacted>)")
    }
}

/// The key can come from Secrets Manager like the other secrets
/// ([`crate::adapters::secret_source::KeySource`]).
impl SecretKey for StripeApiKey {
    const WHAT: &'static str = "Stripe API key";
    type Invalid = InvalidApiKey;

    fn from_secret(bytes: Vec<u8>) -> Result<Self, InvalidApiKey> {
        let key = String::from_utf8(bytes).map_err(|_| InvalidApiKey)?;
        Self::new(key.trim())
    }
}

/// A builder of HTTPS clients for Stripe: rustls with ring (installed as the process's crypto
/// provider if none is; reqwest brings none of its own here), every request bounded by
/// [`PROVIDER_TIMEOUT`].
pub fn http_client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(PROVIDER_TIMEOUT)
        .user_agent(concat!("lineup/", env!("CARGO_PKG_VERSION")))
}

/// An HTTPS client of [`http_client_builder`].
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    http_client_builder().build()
}

/// Why a call to Stripe failed: the source of the [`LineupError`] the port returns.
#[derive(Debug, thiserror::Error)]
pub enum StripeCallError {
    /// No answer: Stripe could not be reached, the request timed out, or the connection broke.
    #[error("could not {operation}: no answer from Stripe")]
    Transport {
        /// What the adapter was doing ("create a payment").
        operation: &'static str,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// Stripe answered with an error.
    #[error("could not {operation}: Stripe refused")]
    Refused {
        /// What the adapter was doing.
        operation: &'static str,
        /// What Stripe answered.
        #[source]
        source: StripeError,
    },
    /// A success answer that is not the JSON expected.
    #[error("could not {operation}: Stripe's answer is unreadable")]
    Unreadable {
        /// What the adapter was doing.
        operation: &'static str,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A success answer whose values do not convert into Lineup's.
    #[error("could not {operation}: Stripe's answer does not convert")]
    Answer {
        /// What the adapter was doing.
        operation: &'static str,
        /// What does not convert.
        #[source]
        source: AnswerError,
    },
    /// A cancellation answered with a payment that is neither cancelled nor past cancelling.
    #[error("could not cancel payment {id}: Stripe answered with it {}", .status.as_str())]
    NotCanceled {
        /// The payment.
        id: PaymentId,
        /// Where it stands.
        status: PaymentStatus,
    },
    /// An amount Stripe's unit cannot hold exactly: nothing was sent.
    #[error("could not {operation}: the amount cannot be sent to Stripe")]
    Amount {
        /// What the adapter was doing.
        operation: &'static str,
        /// Why.
        #[source]
        source: AmountError,
    },
    /// A metadata key or value longer than Stripe takes: nothing was sent.
    #[error("could not {operation}: metadata {key} is longer than Stripe takes")]
    MetadataTooLong {
        /// What the adapter was doing.
        operation: &'static str,
        /// The key.
        key: &'static str,
    },
}

impl StripeCallError {
    /// Whether the same call may succeed later: no answer (unless the request could not even
    /// be built), or a refusal Stripe marks as temporary ([`StripeError::is_retryable`]).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Transport { source, .. } => !source.is_builder(),
            Self::Refused { source, .. } => source.is_retryable(),
            Self::Unreadable { .. }
            | Self::Answer { .. }
            | Self::NotCanceled { .. }
            | Self::Amount { .. }
            | Self::MetadataTooLong { .. } => false,
        }
    }
}

impl From<StripeCallError> for LineupError {
    fn from(error: StripeCallError) -> Self {
        let store = Store::PaymentProvider;
        if error.is_retryable() {
            LineupError::Unavailable {
                store,
                source: Box::new(error),
            }
        } else {
            LineupError::Failed {
                store,
                source: Box::new(error),
            }
        }
    }
}

/// The operations, as named in errors.
mod operation {
    pub const CREATE: &str = "create a payment";
    pub const FETCH: &str = "fetch a payment";
    pub const CANCEL: &str = "cancel a payment";
    pub const REFUND: &str = "refund a payment";
    pub const LIST_REFUNDS: &str = "list a payment's refunds";
}

/// A form body: name and value pairs, in order.
type Form = Vec<(String, String)>;

/// The body of `POST /v1/payment_intents` for a payment: the amount in Stripe's unit, the
/// currency in lower case, cards only, and the order's terms as metadata.
fn payment_form(payment: &NewPayment) -> Result<Form, StripeCallError> {
    let terms = &payment.terms;
    let amount = amounts::to_stripe(terms.amount, &terms.currency).map_err(|source| {
        StripeCallError::Amount {
            operation: operation::CREATE,
            source,
        }
    })?;
    let mut form = vec![
        ("amount".to_owned(), amount.to_string()),
        ("currency".to_owned(), terms.currency.to_ascii_lowercase()),
        ("payment_method_types[]".to_owned(), "card".to_owned()),
    ];
    for (key, value) in terms.metadata() {
        push_metadata(&mut form, operation::CREATE, key, value)?;
    }
    Ok(form)
}

/// The body of `POST /v1/refunds`: the payment, the amount in Stripe's unit, and Lineup's
/// refund id as metadata (to find the refund again by listing).
fn refund_form(refund: &NewRefund) -> Result<Form, StripeCallError> {
    let amount = amounts::to_stripe(refund.amount, &refund.currency).map_err(|source| {
        StripeCallError::Amount {
            operation: operation::REFUND,
            source,
        }
    })?;
    let mut form = vec![
        (
            "payment_intent".to_owned(),
            refund.payment_id.as_str().to_owned(),
        ),
        ("amount".to_owned(), amount.to_string()),
    ];
    push_metadata(
        &mut form,
        operation::REFUND,
        metadata_keys::REFUND,
        refund.refund_id.clone(),
    )?;
    Ok(form)
}

fn push_metadata(
    form: &mut Form,
    operation: &'static str,
    key: &'static str,
    value: String,
) -> Result<(), StripeCallError> {
    if key.chars().count() > METADATA_KEY_LIMIT || value.chars().count() > METADATA_VALUE_LIMIT {
        return Err(StripeCallError::MetadataTooLong { operation, key });
    }
    form.push((format!("metadata[{key}]"), value));
    Ok(())
}

/// `raw` percent-encoded for a URL path segment or a query value: everything but letters,
/// digits and `-._~` (a payment id is any visible ASCII, `/` and `?` included).
fn url_component(raw: &str) -> String {
    let mut encoded = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// What becomes of a cancellation, by the payment's status after it: an error for a status
/// that is neither cancelled nor past cancelling.
fn cancellation_of(payment: ProviderPayment) -> Result<Cancellation, StripeCallError> {
    match payment.status {
        PaymentStatus::Canceled => Ok(Cancellation::Canceled(payment)),
        PaymentStatus::Succeeded | PaymentStatus::Processing => Ok(Cancellation::TooLate(payment)),
        status => Err(StripeCallError::NotCanceled {
            id: payment.id,
            status,
        }),
    }
}

/// The payment provider over Stripe's API (or localstripe's).
#[derive(Clone)]
pub struct StripeProvider {
    /// `https://api.stripe.com`, or localstripe's; no trailing `/`.
    api_base: String,
    api_key: StripeApiKey,
    http: reqwest::Client,
}

impl std::fmt::Debug for StripeProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeProvider")
            .field("api_base", &self.api_base)
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl StripeProvider {
    /// The API at `api_base` (`https://api.stripe.com`, or localstripe's address), called with
    /// `api_key` through `http` (whose timeout bounds each call: see [`http_client`]).
    pub fn new(api_base: String, api_key: StripeApiKey, http: reqwest::Client) -> Self {
        Self {
            api_base: api_base.trim_end_matches('/').to_owned(),
            api_key,
            http,
        }
    }

    /// The API at `api_base` through a client of [`http_client`].
    pub fn open(api_base: String, api_key: StripeApiKey) -> Result<Self, reqwest::Error> {
        Ok(Self::new(api_base, api_key, http_client()?))
    }

    fn authorized(&self, request: RequestBuilder) -> RequestBuilder {
        request
            .bearer_auth(self.api_key.expose())
            .header("Stripe-Version", API_VERSION)
    }

    fn get(&self, path_and_query: &str) -> RequestBuilder {
        self.authorized(self.http.get(format!("{}{path_and_query}", self.api_base)))
    }

    fn post(&self, path: &str, idempotency_key: &str, form: Option<&Form>) -> RequestBuilder {
        let request = self
            .authorized(self.http.post(format!("{}{path}", self.api_base)))
            .header("Idempotency-Key", idempotency_key);
        match form {
            Some(form) => request.form(form),
            None => request,
        }
    }

    /// Sends a request and reads a success answer as `T`.
    async fn call<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        request: RequestBuilder,
    ) -> Result<T, StripeCallError> {
        let transport = |source| StripeCallError::Transport { operation, source };
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let body = response.bytes().await.map_err(transport)?;
        if !status.is_success() {
            return Err(StripeCallError::Refused {
                operation,
                source: StripeError::from_answer(status.as_u16(), &body),
            });
        }
        serde_json::from_slice(&body)
            .map_err(|source| StripeCallError::Unreadable { operation, source })
    }

    async fn payment_intent(
        &self,
        operation: &'static str,
        request: RequestBuilder,
    ) -> Result<ProviderPayment, StripeCallError> {
        self.call::<PaymentIntent>(operation, request)
            .await?
            .into_payment()
            .map_err(|source| StripeCallError::Answer { operation, source })
    }

    async fn fetch(&self, id: &PaymentId) -> Result<Option<ProviderPayment>, StripeCallError> {
        let request = self.get(&format!(
            "/v1/payment_intents/{}",
            url_component(id.as_str())
        ));
        match self.payment_intent(operation::FETCH, request).await {
            Ok(payment) => Ok(Some(payment)),
            Err(StripeCallError::Refused { source, .. }) if source.is_missing_resource() => {
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    async fn cancel(&self, id: &PaymentId) -> Result<Cancellation, StripeCallError> {
        let path = format!("/v1/payment_intents/{}/cancel", url_component(id.as_str()));
        let key = format!("lineup-cancel-{}", id.as_str());
        match self
            .payment_intent(operation::CANCEL, self.post(&path, &key, None))
            .await
        {
            Ok(payment) => cancellation_of(payment),
            // Stripe refuses to cancel a payment that is already cancelled or past cancelling
            // (400 `payment_intent_unexpected_state`; localstripe gives no code): the payment
            // as it is now says which.
            Err(StripeCallError::Refused { operation, source })
                if source.status == StatusCode::BAD_REQUEST.as_u16() =>
            {
                let refused = StripeCallError::Refused { operation, source };
                match self.fetch(id).await? {
                    Some(payment) => cancellation_of(payment).map_err(|_| refused),
                    None => Err(refused),
                }
            }
            Err(error) => Err(error),
        }
    }

    async fn make_refund(&self, refund: &NewRefund) -> Result<ProviderRefund, StripeCallError> {
        let form = refund_form(refund)?;
        let request = self.post("/v1/refunds", &refund.refund_id, Some(&form));
        self.call::<Refund>(operation::REFUND, request)
            .await?
            .into_refund(&refund.payment_id)
            .map_err(|source| StripeCallError::Answer {
                operation: operation::REFUND,
                source,
            })
    }

    async fn list_refunds(
        &self,
        payment: &PaymentId,
    ) -> Result<Vec<ProviderRefund>, StripeCallError> {
        let operation = operation::LIST_REFUNDS;
        let mut refunds = Vec::new();
        let mut starting_after: Option<String> = None;
        loop {
            let mut query = format!(
                "/v1/refunds?payment_intent={}&limit={REFUNDS_PAGE}",
                url_component(payment.as_str())
            );
            if let Some(last) = &starting_after {
                query.push_str(&format!("&starting_after={}", url_component(last)));
            }
            let page: List<Refund> = self.call(operation, self.get(&query)).await?;
            starting_after = page.data.last().map(|refund| refund.id.clone());
            for refund in page.data {
                refunds.push(
                    refund
                        .into_refund(payment)
                        .map_err(|source| StripeCallError::Answer { operation, source })?,
                );
            }
            if !page.has_more || starting_after.is_none() {
                return Ok(refunds);
            }
        }
    }
}

#[async_trait]
impl PaymentProvider for StripeProvider {
    async fn create_payment(&self, payment: &NewPayment) -> Result<ProviderPayment, LineupError> {
        let form = payment_form(payment)?;
        let request = self.post("/v1/payment_intents", &payment.idempotency_key, Some(&form));
        Ok(self.payment_intent(operation::CREATE, request).await?)
    }

    async fn payment(&self, id: &PaymentId) -> Result<Option<ProviderPayment>, LineupError> {
        Ok(self.fetch(id).await?)
    }

    async fn cancel_payment(&self, id: &PaymentId) -> Result<Cancellation, LineupError> {
        Ok(self.cancel(id).await?)
    }

    async fn refund(&self, refund: &NewRefund) -> Result<ProviderRefund, LineupError> {
        Ok(self.make_refund(refund).await?)
    }

    async fn refunds_of(&self, payment: &PaymentId) -> Result<Vec<ProviderRefund>, LineupError> {
        Ok(self.list_refunds(payment).await?)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use super::*;
    use crate::application::ports::ledger::OrderTerms;
    use crate::domain::ids::{CustomerId, EventId, OrderId, SeatId};

    fn terms(amount: i64, currency: &str) -> OrderTerms {
        OrderTerms {
            order_id: OrderId::parse("0b0c6f5e-4d9b-4a8e-9d61-1f2e3d4c5b6a").unwrap(),
            event_id: EventId::parse("demo").unwrap(),
            customer_id: CustomerId::parse("customer-1").unwrap(),
            seat_ids: vec![
                SeatId::parse("A-001").unwrap(),
                SeatId::parse("A-002").unwrap(),
            ],
            amount,
            currency: currency.into(),
            ticket_limit: Some(4),
            admission_expires_at: None,
        }
    }

    fn new_payment(amount: i64, currency: &str) -> NewPayment {
        NewPayment {
            terms: terms(amount, currency),
            idempotency_key: "lineup-checkout-0b0c6f5e-4d9b-4a8e-9d61-1f2e3d4c5b6a".into(),
        }
    }

    fn provider() -> StripeProvider {
        StripeProvider::open(
            "http://127.0.0.1:9/".into(),
            StripeApiKey::new("sk_test_unit").unwrap(),
        )
        .unwrap()
    }

    fn body_of(request: RequestBuilder) -> (reqwest::Request, String) {
        let request = request.build().unwrap();
        let body = request
            .body()
            .and_then(|body| body.as_bytes())
            .map(|bytes| String::from_utf8(bytes.to_vec()).unwrap())
            .unwrap_or_default();
        (request, body)
    }

    #[test]
    fn a_payment_is_asked_for_in_stripe_s_unit_cards_only_with_the_terms_as_metadata() {
        let form = payment_form(&new_payment(24_000, "KRW")).unwrap();
        let pairs: HashMap<_, _> = form.iter().cloned().collect();
        assert_eq!(pairs["amount"], "24000");
        assert_eq!(pairs["currency"], "krw");
        assert_eq!(pairs["payment_method_types[]"], "card");
        assert_eq!(
            pairs["metadata[lineup_order]"],
            "0b0c6f5e-4d9b-4a8e-9d61-1f2e3d4c5b6a"
        );
        assert_eq!(pairs["metadata[lineup_seats]"], "A-001,A-002");
        assert_eq!(pairs["metadata[lineup_ticket_limit]"], "4");
        assert!(!pairs.contains_key("metadata[lineup_admission_expires_at]"));

        let (request, body) =
            body_of(provider().post("/v1/payment_intents", "lineup-checkout-x", Some(&form)));
        assert_eq!(
            request.url().as_str(),
            "http://127.0.0.1:9/v1/payment_intents"
        );
        assert!(
            body.starts_with("amount=24000&currency=krw&payment_method_types%5B%5D=card&"),
            "{body}"
        );
        assert!(body.contains("metadata%5Blineup_seats%5D=A-001%2CA-002"));
        let headers = request.headers();
        assert_eq!(headers["idempotency-key"], "lineup-checkout-x");
        assert_eq!(headers["stripe-version"], API_VERSION);
        assert_eq!(headers["authorization"], "Bearer sk_test_unit");
        assert!(headers["authorization"].is_sensitive());
        assert_eq!(headers["content-type"], "application/x-www-form-urlencoded");
    }

    #[test]
    fn an_amount_stripe_cannot_take_is_refused_before_sending() {
        let error = payment_form(&new_payment(1_234, "KWD")).unwrap_err();
        assert!(matches!(error, StripeCallError::Amount { .. }));
        assert!(matches!(
            LineupError::from(error),
            LineupError::Failed { .. }
        ));
        assert_eq!(
            payment_form(&new_payment(150_000, "MGA")).unwrap()[0].1,
            "1500"
        );
    }

    #[test]
    fn metadata_longer_than_stripe_takes_is_refused() {
        let mut payment = new_payment(24_000, "KRW");
        payment.terms.seat_ids = (0..100)
            .map(|n| SeatId::parse(&format!("A-{n:03}")).unwrap())
            .collect();
        assert!(matches!(
            payment_form(&payment),
            Err(StripeCallError::MetadataTooLong {
                key: "lineup_seats",
                ..
            })
        ));
    }

    #[test]
    fn a_refund_names_the_payment_the_amount_and_lineup_s_refund_id() {
        let refund = NewRefund {
            payment_id: PaymentId::parse("pi_123").unwrap(),
            amount: 1_990,
            currency: "ISK".into(),
            refund_id: "rf_1".into(),
        };
        let form = refund_form(&refund).unwrap();
        assert_eq!(
            form,
            [
                ("payment_intent".to_owned(), "pi_123".to_owned()),
                ("amount".to_owned(), "199000".to_owned()),
                ("metadata[lineup_refund]".to_owned(), "rf_1".to_owned()),
            ]
        );
    }

    #[test]
    fn a_cancellation_posts_no_body_under_its_own_key() {
        let (request, body) = body_of(provider().post(
            "/v1/payment_intents/pi_1/cancel",
            "lineup-cancel-pi_1",
            None,
        ));
        assert_eq!(body, "");
        assert_eq!(request.headers()["idempotency-key"], "lineup-cancel-pi_1");
    }

    #[test]
    fn ids_are_escaped_in_paths_and_queries() {
        assert_eq!(url_component("pi_AZaz09-._~"), "pi_AZaz09-._~");
        assert_eq!(
            url_component("pi/../x?y#z&a=b"),
            "pi%2F..%2Fx%3Fy%23z%26a%3Db"
        );
    }

    #[test]
    fn a_cancellation_is_read_from_the_payment_s_status() {
        let payment = |status| ProviderPayment {
            id: PaymentId::parse("pi_1").unwrap(),
            status,
            amount: 1,
            currency: "USD".into(),
            client_secret: None,
            metadata: HashMap::new(),
            last_error: None,
        };
        assert!(matches!(
            cancellation_of(payment(PaymentStatus::Canceled)),
            Ok(Cancellation::Canceled(_))
        ));
        for status in [PaymentStatus::Succeeded, PaymentStatus::Processing] {
            assert!(matches!(
                cancellation_of(payment(status)),
                Ok(Cancellation::TooLate(_))
            ));
        }
        assert!(cancellation_of(payment(PaymentStatus::RequiresPaymentMethod)).is_err());
    }

    #[test]
    fn what_a_retry_may_cure_is_unavailable_the_rest_failed() {
        let refused = |status: u16| StripeCallError::Refused {
            operation: operation::FETCH,
            source: StripeError::from_answer(status, b""),
        };
        for status in [409, 429, 500, 503] {
            let error = LineupError::from(refused(status));
            assert!(matches!(error, LineupError::Unavailable { .. }), "{status}");
            assert_eq!(error.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        }
        for status in [400, 401, 402, 404] {
            let error = LineupError::from(refused(status));
            assert!(matches!(error, LineupError::Failed { .. }), "{status}");
        }
        let unreadable = StripeCallError::Unreadable {
            operation: operation::FETCH,
            source: serde_json::from_str::<PaymentIntent>("{").unwrap_err(),
        };
        assert!(matches!(
            LineupError::from(unreadable),
            LineupError::Failed { .. }
        ));
    }

    #[tokio::test]
    async fn no_connection_is_unavailable_and_a_bad_base_url_failed() {
        // Port 9 (discard) on loopback: nothing listens in a test environment.
        let client = http_client_builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let unreachable = StripeProvider::new(
            "http://127.0.0.1:9".into(),
            StripeApiKey::new("sk_test_unit").unwrap(),
            client.clone(),
        );
        let id = PaymentId::parse("pi_1").unwrap();
        let error = unreachable.payment(&id).await.unwrap_err();
        assert!(
            matches!(error, LineupError::Unavailable { .. }),
            "{error:?}"
        );

        let misconfigured = StripeProvider::new(
            "not a url".into(),
            StripeApiKey::new("sk_test_unit").unwrap(),
            client,
        );
        let error = misconfigured.payment(&id).await.unwrap_err();
        assert!(matches!(error, LineupError::Failed { .. }), "{error:?}");
    }

    #[test]
    fn the_key_is_never_printed() {
        let key = StripeApiKey::new("sk_live_verysecret").unwrap();
        assert!(!format!("{key:?}").contains("verysecret"));
        let provider = StripeProvider::open("https://api.stripe.com".into(), key).unwrap();
        assert!(!format!("{provider:?}").contains("verysecret"));
        assert!(StripeApiKey::new("").is_err());
        assert!(StripeApiKey::new("sk_test with space").is_err());
        assert!(
            StripeApiKey::new("Kq3x9PlaceholderFromTheStack000").is_err(),
            "the stack's placeholder is refused at cold start"
        );
        assert!(StripeApiKey::from_secret(b"sk_test_x\n".to_vec()).is_ok());
    }
}
