//! DEVELOPMENT ONLY: the claims of a bearer JWT, read WITHOUT checking its signature.
//!
//! In AWS the HTTP API's JWT authorizer verifies the token (issuer, audience, signature, expiry)
//! and hands the function its claims. Locally there is no identity provider, so the dev server
//! takes the claims as they are: clients send the same `Authorization: Bearer <jwt>` header here
//! as in AWS, and anyone can be anyone. Never put this in front of real customers.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{Map, Value};

/// The claims of `Authorization: Bearer <header>.<claims>.<signature>`, as API Gateway passes
/// them to a function (every value a string). `None` when the header is missing or is not a JWT
/// with a `sub`: API Gateway would refuse such a request with 401 before any function ran.
pub fn claims(authorization: Option<&str>) -> Option<Map<String, Value>> {
    let token = authorization?.strip_prefix("Bearer ")?.trim();
    let mut parts = token.split('.');
    let (_header, payload, _signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let decoded = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let Value::Object(claims) = serde_json::from_slice(&decoded).ok()? else {
        return None;
    };
    let claims: Map<String, Value> = claims
        .into_iter()
        .map(|(name, value)| {
            let text = match value {
                Value::String(text) => text,
                other => other.to_string(),
            };
            (name, Value::String(text))
        })
        .collect();
    claims
        .get("sub")
        .and_then(Value::as_str)
        .is_some_and(|sub| !sub.is_empty())
        .then_some(claims)
}

/// An unsigned token for `sub` (`alg: none`), as the page and the simulation make them.
pub fn unsigned_token(sub: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let claims = URL_SAFE_NO_PAD.encode(serde_json::json!({ "sub": sub }).to_string());
    format!("{header}.{claims}.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sub_claim_is_read_from_an_unsigned_or_signed_token() {
        let token = unsigned_token("alice");
        let claims = claims(Some(&format!("Bearer {token}"))).unwrap();
        assert_eq!(claims["sub"], "alice");
        // A real token's signature is ignored (development only); numeric claims become text.
        let payload = URL_SAFE_NO_PAD.encode(br#"{"sub":"bob","exp":1800000000}"#);
        let claims = claims_of(&format!("Bearer eyJhbGciOiJSUzI1NiJ9.{payload}.c2ln"));
        assert_eq!(claims["sub"], "bob");
        assert_eq!(claims["exp"], "1800000000");
    }

    fn claims_of(header: &str) -> Map<String, Value> {
        claims(Some(header)).unwrap()
    }

    #[test]
    fn anything_else_is_no_caller() {
        let no_sub = URL_SAFE_NO_PAD.encode(br#"{"name":"x"}"#);
        let empty_sub = URL_SAFE_NO_PAD.encode(br#"{"sub":""}"#);
        for header in [
            None,
            Some("Basic YWxpY2U6cHc="),
            Some("Bearer"),
            Some("Bearer not-a-jwt"),
            Some("Bearer a.%%%.c"),
            Some("Bearer a.bm90IGpzb24.c"),
            Some(&*format!("Bearer a.{no_sub}.")),
            Some(&*format!("Bearer a.{empty_sub}.")),
            Some("Bearer a.b.c.d"),
        ] {
            assert!(claims(header).is_none(), "{header:?}");
        }
    }
}
