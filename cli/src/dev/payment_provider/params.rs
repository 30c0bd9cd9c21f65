//! A request's parameters as Stripe reads them: form-encoded (`metadata[k]=v`,
//! `payment_method_types[]=card`), checked by name and value with Stripe's refusals, and anything
//! an endpoint does not take refused by name rather than ignored.

use super::errors::StripeError;
use super::state::{NewIntent, NewRefund};

/// Stripe's largest amount (8 digits in the currency's smallest unit).
const MAX_AMOUNT: i64 = 99_999_999;

/// A request's parameters (the form body, or the query of a GET), in order.
#[derive(Debug, Default)]
pub struct Params(pub Vec<(String, String)>);

/// One form-encoded component decoded (`+` a space, `%XX` a byte), if it is UTF-8.
fn decode_component(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => decoded.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
                decoded.push(u8::from_str_radix(hex, 16).ok()?);
                at += 2;
            }
            byte => decoded.push(byte),
        }
        at += 1;
    }
    String::from_utf8(decoded).ok()
}

impl Params {
    /// `a=1&b=2` decoded.
    pub fn decode(raw: &[u8]) -> Result<Self, StripeError> {
        let invalid = || StripeError::invalid_without_code("Invalid request body: not a form");
        let text = std::str::from_utf8(raw).map_err(|_| invalid())?;
        let mut pairs = Vec::new();
        for part in text.split('&').filter(|part| !part.is_empty()) {
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            pairs.push((
                decode_component(name).ok_or_else(invalid)?,
                decode_component(value).ok_or_else(invalid)?,
            ));
        }
        Ok(Self(pairs))
    }

    /// The value of `name` (the last one given), taken out.
    pub fn take(&mut self, name: &str) -> Option<String> {
        let mut found = None;
        self.0.retain(|(key, value)| {
            if key == name {
                found = Some(value.clone());
                false
            } else {
                true
            }
        });
        found
    }

    /// Every `name[key]=value`, as `(key, value)`, taken out (`metadata[k]`, `x[]`, `x[0]`).
    pub fn take_indexed(&mut self, name: &str) -> Vec<(String, String)> {
        let prefix = format!("{name}[");
        let mut found = Vec::new();
        self.0.retain(|(key, value)| {
            match key
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(']'))
            {
                Some(inner) => {
                    found.push((inner.to_owned(), value.clone()));
                    false
                }
                None => true,
            }
        });
        found
    }

    /// Refuses what is left: parameters the endpoint does not take.
    pub fn finish(self, accepted: &str) -> Result<(), StripeError> {
        match self.0.into_iter().next() {
            None => Ok(()),
            Some((name, _)) => Err(StripeError::invalid(
                "parameter_unknown",
                format!(
                    "Received unknown parameter: {name} (lineup dev's provider takes {accepted})"
                ),
            )
            .with_param(name)),
        }
    }
}

pub fn required(value: Option<String>, name: &'static str) -> Result<String, StripeError> {
    value.ok_or_else(|| {
        StripeError::invalid(
            "parameter_missing",
            format!("Missing required param: {name}."),
        )
        .with_param(name)
    })
}

/// A positive whole amount no larger than Stripe takes.
pub fn amount_param(raw: &str, name: &'static str) -> Result<i64, StripeError> {
    let parsed = raw
        .parse::<i64>()
        .ok()
        .filter(|amount| *amount > 0 && raw.bytes().all(|b| b.is_ascii_digit()));
    let amount = parsed.ok_or_else(|| {
        StripeError::invalid(
            "parameter_invalid_integer",
            format!("Invalid positive integer: {raw}"),
        )
        .with_param(name)
    })?;
    if amount > MAX_AMOUNT {
        return Err(StripeError::invalid(
            "amount_too_large",
            format!("Amount must be no more than {MAX_AMOUNT}"),
        )
        .with_param(name));
    }
    Ok(amount)
}

/// One of `allowed`, or Stripe's refusal.
pub fn one_of(
    value: Option<String>,
    name: &'static str,
    allowed: &[&str],
) -> Result<Option<String>, StripeError> {
    match value {
        Some(value) if !allowed.contains(&value.as_str()) => {
            Err(StripeError::invalid_without_code(format!(
                "Invalid {name}: must be one of {}",
                allowed.join(", ")
            ))
            .with_param(name))
        }
        value => Ok(value),
    }
}

pub fn read_new_intent(mut params: Params) -> Result<NewIntent, StripeError> {
    let amount = amount_param(&required(params.take("amount"), "amount")?, "amount")?;
    let currency = required(params.take("currency"), "currency")?;
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(
            StripeError::invalid_without_code(format!("Invalid currency: {currency}"))
                .with_param("currency"),
        );
    }
    for (_, kind) in params.take_indexed("payment_method_types") {
        if kind != "card" {
            return Err(StripeError::invalid_without_code(format!(
                "The payment method type \"{kind}\" is invalid: lineup dev's provider takes \
                 cards only"
            ))
            .with_param("payment_method_types"));
        }
    }
    let confirm = match params.take("confirm").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(
                StripeError::invalid_without_code(format!("Invalid boolean: {other}"))
                    .with_param("confirm"),
            )
        }
    };
    let capture_method = params.take("capture_method");
    if capture_method.as_deref() == Some("manual") {
        return Err(StripeError::invalid_without_code(
            "lineup dev's provider does not implement capture_method=manual",
        )
        .with_param("capture_method"));
    }
    let capture_method = one_of(
        capture_method,
        "capture_method",
        &["automatic", "automatic_async"],
    )?;
    let new = NewIntent {
        amount,
        currency: currency.to_ascii_lowercase(),
        metadata: params.take_indexed("metadata"),
        payment_method: params.take("payment_method"),
        confirm,
        description: params.take("description"),
        capture_method,
    };
    params.finish(
        "amount, currency, payment_method_types[], metadata[...], payment_method, confirm, \
         description, capture_method",
    )?;
    Ok(new)
}

pub fn read_new_refund(mut params: Params) -> Result<NewRefund, StripeError> {
    let payment_intent = required(params.take("payment_intent"), "payment_intent")?;
    let amount = params
        .take("amount")
        .map(|raw| amount_param(&raw, "amount"))
        .transpose()?;
    let reason = one_of(
        params.take("reason"),
        "reason",
        &["duplicate", "fraudulent", "requested_by_customer"],
    )?;
    let new = NewRefund {
        payment_intent,
        amount,
        metadata: params.take_indexed("metadata"),
        reason,
    };
    params.finish("payment_intent, amount, metadata[...], reason")?;
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_is_decoded_as_browsers_and_reqwest_encode_it() {
        let mut params = Params::decode(
            b"amount=24000&currency=krw&payment_method_types%5B%5D=card\
              &metadata%5Blineup_seats%5D=A-001%2CA-002&metadata%5Bnote%5D=a+b&flag",
        )
        .unwrap();
        assert_eq!(params.take("amount").as_deref(), Some("24000"));
        assert_eq!(
            params.take_indexed("payment_method_types"),
            [(String::new(), "card".to_owned())]
        );
        assert_eq!(
            params.take_indexed("metadata"),
            [
                ("lineup_seats".to_owned(), "A-001,A-002".to_owned()),
                ("note".to_owned(), "a b".to_owned())
            ]
        );
        assert_eq!(params.take("flag").as_deref(), Some(""));
        let left = params.finish("amount").unwrap_err();
        assert_eq!(left.code, Some("parameter_unknown"));
        assert_eq!(left.param.as_deref(), Some("currency"));
        assert!(Params::decode(b"a=%zz").is_err());
        assert!(Params::decode(b"a=%ff").is_err(), "not UTF-8");
        assert!(Params::decode(b"").unwrap().finish("").is_ok());
    }

    #[test]
    fn a_payment_s_parameters_are_checked_as_stripe_checks_them() {
        let read = |body: &str| read_new_intent(Params::decode(body.as_bytes()).unwrap());
        let new = read(
            "amount=24000&currency=KRW&payment_method_types[]=card&metadata[k]=v\
             &payment_method=pm_card_visa&confirm=true",
        )
        .unwrap();
        assert_eq!(new.amount, 24_000);
        assert_eq!(new.currency, "krw");
        assert_eq!(new.metadata, [("k".to_owned(), "v".to_owned())]);
        assert!(new.confirm);
        for bad in [
            "currency=krw",
            "amount=0&currency=krw",
            "amount=-5&currency=krw",
            "amount=12.5&currency=krw",
            "amount=100000000&currency=krw",
            "amount=1&currency=kr",
            "amount=1&currency=krw&payment_method_types[]=kakao_pay",
            "amount=1&currency=krw&confirm=maybe",
            "amount=1&currency=krw&capture_method=manual",
            "amount=1&currency=krw&automatic_payment_methods[enabled]=true",
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
        let refund = read_new_refund(Params::decode(b"payment_intent=pi_1").unwrap()).unwrap();
        assert_eq!(refund.amount, None);
        assert!(read_new_refund(Params::decode(b"amount=5").unwrap()).is_err());
        assert!(
            read_new_refund(Params::decode(b"payment_intent=pi_1&charge=ch_1").unwrap()).is_err()
        );
    }
}
