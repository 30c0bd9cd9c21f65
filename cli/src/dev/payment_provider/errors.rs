//! Stripe's error answers (`{"error": {"type", "code", "message", "param"}}` with Stripe's HTTP
//! statuses), so a client written against Stripe reads the dev provider's refusals as Stripe's.

use axum::http::StatusCode;
use serde_json::{json, Map, Value};

/// One refusal, as Stripe words it.
#[derive(Debug, Clone, PartialEq)]
pub struct StripeError {
    pub status: StatusCode,
    /// `invalid_request_error`, `card_error`, `idempotency_error`, `api_error`.
    pub kind: &'static str,
    /// Stripe's code (`resource_missing`, `card_declined`...), when Stripe gives one.
    pub code: Option<&'static str>,
    pub message: String,
    /// The parameter at fault, when one is.
    pub param: Option<String>,
    /// More fields of the error object (a decline's `payment_intent`, `decline_code`...).
    pub extra: Map<String, Value>,
}

impl StripeError {
    fn new(
        status: StatusCode,
        kind: &'static str,
        code: Option<&'static str>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            kind,
            code,
            message: message.into(),
            param: None,
            extra: Map::new(),
        }
    }

    /// 400 `invalid_request_error` with `code`.
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            Some(code),
            message,
        )
    }

    /// 400 `invalid_request_error` without a code (Stripe gives none for some refusals).
    pub fn invalid_without_code(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            None,
            message,
        )
    }

    /// 404 `resource_missing`: no such `what` (`payment_intent`, `refund`).
    pub fn missing(what: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("resource_missing"),
            format!("No such {what}: '{id}'"),
        )
        .with_param("id")
    }

    /// 400 `payment_intent_unexpected_state`: the payment is not where the operation starts.
    pub fn unexpected_state(message: impl Into<String>) -> Self {
        Self::invalid("payment_intent_unexpected_state", message)
    }

    /// 401: no usable API key.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            None,
            message,
        )
    }

    /// 400 `idempotency_error`: a key reused for another request.
    pub fn idempotency(key: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "idempotency_error",
            None,
            format!(
                "Keys for idempotent requests can only be used with the same parameters they \
                 were first used with. Try using a key other than '{key}' if you meant to \
                 execute a different request."
            ),
        )
    }

    /// 402 `card_error` / `card_declined`, naming the charge and the payment as it is now.
    pub fn card_declined(message: &str, charge: &str, payment_intent: Value) -> Self {
        let mut error = Self::new(
            StatusCode::PAYMENT_REQUIRED,
            "card_error",
            Some("card_declined"),
            message,
        );
        error
            .extra
            .insert("decline_code".into(), "generic_decline".into());
        error.extra.insert("charge".into(), charge.into());
        error
            .extra
            .insert("payment_intent".into(), payment_intent.clone());
        if let Some(method) = payment_intent
            .pointer("/last_payment_error/payment_method")
            .cloned()
        {
            error.extra.insert("payment_method".into(), method);
        }
        error
    }

    /// 404 for a route Stripe does not have (or the dev provider does not serve).
    pub fn unrecognized(method: &str, path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            None,
            format!(
                "Unrecognized request URL ({method}: {path}). lineup dev's provider serves the \
                 part of Stripe's API Lineup uses: PaymentIntents and refunds."
            ),
        )
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// The body Stripe answers with.
    pub fn body(&self) -> Value {
        let mut error = Map::new();
        error.insert("type".into(), self.kind.into());
        if let Some(code) = self.code {
            error.insert("code".into(), code.into());
            error.insert(
                "doc_url".into(),
                format!(
                    "https://stripe.com/docs/error-codes/{}",
                    code.replace('_', "-")
                )
                .into(),
            );
        }
        error.insert("message".into(), self.message.clone().into());
        if let Some(param) = &self.param {
            error.insert("param".into(), param.clone().into());
        }
        error.extend(self.extra.clone());
        json!({ "error": error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_has_stripe_s_shape() {
        let body = StripeError::missing("payment_intent", "pi_x").body();
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["code"], "resource_missing");
        assert_eq!(body["error"]["message"], "No such payment_intent: 'pi_x'");
        assert_eq!(body["error"]["param"], "id");

        let body = StripeError::idempotency("k").body();
        assert_eq!(body["error"]["type"], "idempotency_error");
        assert!(body["error"].get("code").is_none());

        let declined = StripeError::card_declined(
            "Your card was declined.",
            "ch_1",
            json!({"id": "pi_1", "last_payment_error": {"payment_method": {"id": "pm_1"}}}),
        );
        assert_eq!(declined.status, StatusCode::PAYMENT_REQUIRED);
        let body = declined.body();
        assert_eq!(body["error"]["type"], "card_error");
        assert_eq!(body["error"]["code"], "card_declined");
        assert_eq!(body["error"]["decline_code"], "generic_decline");
        assert_eq!(body["error"]["payment_intent"]["id"], "pi_1");
        assert_eq!(body["error"]["payment_method"]["id"], "pm_1");
    }
}
