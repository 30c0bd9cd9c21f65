//! `Idempotency-Key`, honoured as Stripe does (localstripe ignores it): the first answer to a
//! POST under a key is saved, and a request under the same key gets it again if it is the same
//! request (same endpoint, same parameters), or a 400 `idempotency_error` if it is another.
//! Only answers of requests that got past the reading of their parameters are saved, as at
//! Stripe. Keys are kept for the whole run (Stripe: at least 24 hours).

use std::collections::HashMap;

use axum::http::StatusCode;
use serde_json::Value;

use super::errors::StripeError;

/// Stripe's longest key.
pub const MAX_KEY_LENGTH: usize = 255;

/// What a request under a key gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// The key is new: run the request, then [`Keys::save`] its answer.
    New,
    /// The same request came before: its answer.
    Replay(StatusCode, Value),
    /// The key was used for another request.
    Mismatch(StripeError),
}

struct Saved {
    request: String,
    status: StatusCode,
    body: Value,
}

/// The keys seen, and their first answers.
#[derive(Default)]
pub struct Keys(HashMap<String, Saved>);

/// What makes two requests the same: the method, the path and the parameters in any order.
pub fn request_digest(method: &str, path: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut digest = format!("{method} {path}");
    for (name, value) in sorted {
        digest.push('\n');
        digest.push_str(name);
        digest.push('=');
        digest.push_str(value);
    }
    digest
}

/// A key Stripe takes: at most 255 characters.
pub fn check_key(key: &str) -> Result<(), StripeError> {
    if key.is_empty() || key.chars().count() > MAX_KEY_LENGTH {
        Err(StripeError::invalid_without_code(format!(
            "Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters long"
        )))
    } else {
        Ok(())
    }
}

impl Keys {
    pub fn lookup(&self, key: &str, request: &str) -> Lookup {
        match self.0.get(key) {
            None => Lookup::New,
            Some(saved) if saved.request == request => {
                Lookup::Replay(saved.status, saved.body.clone())
            }
            Some(_) => Lookup::Mismatch(StripeError::idempotency(key)),
        }
    }

    pub fn save(&mut self, key: &str, request: String, status: StatusCode, body: Value) {
        self.0.entry(key.to_owned()).or_insert(Saved {
            request,
            status,
            body,
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn the_same_request_gets_the_first_answer_another_an_idempotency_error() {
        let mut keys = Keys::default();
        let first = request_digest(
            "POST",
            "/v1/refunds",
            &params(&[("payment_intent", "pi_1"), ("amount", "100")]),
        );
        assert_eq!(keys.lookup("k", &first), Lookup::New);
        keys.save("k", first.clone(), StatusCode::OK, json!({"id": "re_1"}));

        let reordered = request_digest(
            "POST",
            "/v1/refunds",
            &params(&[("amount", "100"), ("payment_intent", "pi_1")]),
        );
        assert_eq!(
            keys.lookup("k", &reordered),
            Lookup::Replay(StatusCode::OK, json!({"id": "re_1"}))
        );
        let other = request_digest(
            "POST",
            "/v1/refunds",
            &params(&[("amount", "101"), ("payment_intent", "pi_1")]),
        );
        let Lookup::Mismatch(error) = keys.lookup("k", &other) else {
            panic!("a mismatch");
        };
        assert_eq!(error.kind, "idempotency_error");
        assert_eq!(error.status, StatusCode::BAD_REQUEST);
        let elsewhere = request_digest("POST", "/v1/payment_intents", &[]);
        assert!(matches!(keys.lookup("k", &elsewhere), Lookup::Mismatch(_)));
        assert_eq!(keys.lookup("other", &other), Lookup::New);
    }

    #[test]
    fn a_key_is_at_most_255_characters() {
        assert!(check_key(&"k".repeat(255)).is_ok());
        assert!(check_key(&"k".repeat(256)).is_err());
        assert!(check_key("").is_err());
    }
}
