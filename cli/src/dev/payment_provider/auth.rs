//! Who may call: test keys only, a secret key (`sk_test_...`) for everything and a publishable
//! key (`pk_test_...`) only where Stripe.js uses one (with the PaymentIntent's client secret).

use axum::http::HeaderMap;
use base64::Engine;

use super::errors::StripeError;
use super::params::Params;

/// Who is calling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// `sk_test_...` (or `rk_test_...`): the server.
    Secret,
    /// `pk_test_...`: a browser, through Stripe.js.
    Publishable,
}

/// The caller's key: `Authorization: Bearer <key>` (or Basic `<key>:`), else `key=` in the
/// parameters as Stripe.js sends a publishable key. Test keys only.
pub fn caller(headers: &HeaderMap, params: &mut Params) -> Result<Caller, StripeError> {
    let in_params = params.take("key");
    let header = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok());
    let key = match header {
        Some(value) => {
            if let Some(bearer) = value.strip_prefix("Bearer ") {
                Some(bearer.trim().to_owned())
            } else if let Some(basic) = value.strip_prefix("Basic ") {
                base64::engine::general_purpose::STANDARD
                    .decode(basic.trim())
                    .ok()
                    .and_then(|decoded| String::from_utf8(decoded).ok())
                    .map(|pair| pair.split(':').next().unwrap_or_default().to_owned())
            } else {
                None
            }
        }
        None => in_params,
    };
    let Some(key) = key.filter(|key| !key.is_empty()) else {
        return Err(StripeError::unauthorized(
            "You did not provide an API key. You need to provide your API key in the \
             Authorization header, using Bearer auth (e.g. 'Authorization: Bearer \
             sk_test_...').",
        ));
    };
    let long_enough = key.len() > "sk_test_".len();
    if long_enough && (key.starts_with("sk_test_") || key.starts_with("rk_test_")) {
        Ok(Caller::Secret)
    } else if long_enough && key.starts_with("pk_test_") {
        Ok(Caller::Publishable)
    } else {
        let shown: String = key.chars().take(8).collect();
        Err(StripeError::unauthorized(format!(
            "Invalid API Key provided: {shown}****. lineup dev's provider takes test keys: \
             sk_test_... (a pk_test_... key where Stripe.js uses one)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", authorization.parse().unwrap());
        headers
    }

    #[test]
    fn test_keys_only_secret_or_publishable() {
        let mut none = Params::default();
        let key = |authorization: &str| caller(&headers(authorization), &mut Params::default());
        assert_eq!(key("Bearer sk_test_abc"), Ok(Caller::Secret));
        assert_eq!(key("Bearer rk_test_abc"), Ok(Caller::Secret));
        assert_eq!(key("Bearer pk_test_abc"), Ok(Caller::Publishable));
        let basic = base64::engine::general_purpose::STANDARD.encode("sk_test_abc:");
        assert_eq!(key(&format!("Basic {basic}")), Ok(Caller::Secret));
        for refused in [
            "Bearer sk_live_abc",
            "Bearer sk_test_",
            "Bearer whatever",
            "Token x",
        ] {
            let error = key(refused).unwrap_err();
            assert_eq!(error.status, StatusCode::UNAUTHORIZED, "{refused}");
        }
        assert!(caller(&HeaderMap::new(), &mut none).is_err());
        let mut stripe_js = Params::decode(b"key=pk_test_abc&client_secret=s").unwrap();
        assert_eq!(
            caller(&HeaderMap::new(), &mut stripe_js),
            Ok(Caller::Publishable)
        );
        assert_eq!(
            stripe_js.take("client_secret").as_deref(),
            Some("s"),
            "the key is taken out, the rest left"
        );
        assert!(stripe_js.take("key").is_none());
    }
}
