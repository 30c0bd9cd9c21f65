//! An in-memory payment provider that behaves as Stripe does where Lineup depends on it: one
//! payment per idempotency key, cancel refused once the money is taken, refunds found by the
//! payment they refund. It counts what it was asked (a refund made twice shows), can fail like
//! an outage, and can play the worst failure of all: the provider did the work, and its answer
//! was lost.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use crate::application::error::{LineupError, Store};
use crate::application::fakes::outage::{Faulty, Outage};
use crate::application::ports::payments::{
    Cancellation, NewPayment, NewRefund, PaymentProvider, PaymentStatus, ProviderPayment,
    ProviderRefund, RefundStatus,
};
use crate::domain::ids::PaymentId;

#[derive(Debug, Default)]
struct State {
    outage: Outage,
    payments: BTreeMap<String, ProviderPayment>,
    /// Payment ids by the idempotency key that made them.
    by_key: HashMap<String, String>,
    refunds: Vec<ProviderRefund>,
    /// Refunds by their idempotency key (Lineup's refund id).
    refunds_by_key: HashMap<String, usize>,
    /// The next this many calls do their work and then fail, as a timeout after the provider
    /// acted does.
    lose_answers: u32,
    /// The status a refund is made in (`succeeded` unless told otherwise).
    refund_status: Option<RefundStatus>,
    /// Payments the customer completes just as Lineup cancels them (the race a cancel can lose).
    paid_at_cancel: Vec<String>,
    /// Idempotency keys ignored, as localstripe does: Lineup's own exactly-once is then all
    /// there is.
    keys_ignored: bool,
}

/// The fake provider.
#[derive(Debug, Default)]
pub(crate) struct FakeProvider {
    state: Mutex<State>,
}

impl Faulty for FakeProvider {
    fn with_outage<R>(&self, f: impl FnOnce(&mut Outage) -> R) -> R {
        f(&mut self.lock().outage)
    }
}

impl FakeProvider {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn enter(&self, operation: &'static str) -> Result<MutexGuard<'_, State>, LineupError> {
        let mut state = self.lock();
        state
            .outage
            .enter(Store::PaymentProvider, "payment provider", operation)?;
        Ok(state)
    }

    /// The next `calls` calls that change something (create, cancel, refund) do what they were
    /// asked, then fail as if timed out.
    pub(crate) fn lose_next_answers(&self, calls: u32) {
        self.lock().lose_answers = calls;
    }

    /// Idempotency keys are ignored from now on (a second call makes a second object).
    pub(crate) fn ignore_idempotency_keys(&self) {
        self.lock().keys_ignored = true;
    }

    /// Refunds are made in this status from now on.
    pub(crate) fn make_refunds(&self, status: RefundStatus) {
        self.lock().refund_status = Some(status);
    }

    /// Every refund still pending goes to `status` (the bank finished), with no webhook.
    pub(crate) fn finish_refunds(&self, status: RefundStatus) {
        for refund in &mut self.lock().refunds {
            if refund.status == RefundStatus::Pending {
                refund.status = status;
            }
        }
    }

    /// The customer pays (or the bank moves the payment on): its status now.
    pub(crate) fn set_status(&self, payment: &PaymentId, status: PaymentStatus) {
        if let Some(stored) = self.lock().payments.get_mut(payment.as_str()) {
            stored.status = status;
        }
    }

    /// The customer completes `payment` in the instant before Lineup's next cancel of it.
    pub(crate) fn pay_just_before_cancel(&self, payment: &PaymentId) {
        self.lock().paid_at_cancel.push(payment.as_str().to_owned());
    }

    /// Every payment made, by id.
    pub(crate) fn payments(&self) -> Vec<ProviderPayment> {
        self.lock().payments.values().cloned().collect()
    }

    /// Every refund made, in order.
    pub(crate) fn refunds(&self) -> Vec<ProviderRefund> {
        self.lock().refunds.clone()
    }
}

/// The answer of a call that changed something, unless its answer is to be lost.
fn answer<T>(state: &mut State, value: T) -> Result<T, LineupError> {
    if state.lose_answers > 0 {
        state.lose_answers -= 1;
        return Err(LineupError::Unavailable {
            store: Store::PaymentProvider,
            source: Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the provider's answer was lost (a played timeout)",
            )),
        });
    }
    Ok(value)
}

#[async_trait]
impl PaymentProvider for FakeProvider {
    async fn create_payment(&self, payment: &NewPayment) -> Result<ProviderPayment, LineupError> {
        let mut state = self.enter("create_payment")?;
        let known = state.by_key.get(&payment.idempotency_key).cloned();
        if let Some(id) = known.filter(|_| !state.keys_ignored) {
            let made = state.payments[&id].clone();
            return answer(&mut state, made);
        }
        let id = format!("pi_fake_{:04}", state.payments.len() + 1);
        let made = ProviderPayment {
            id: PaymentId::parse(&id).expect("a valid id"),
            status: PaymentStatus::RequiresPaymentMethod,
            amount: payment.terms.amount,
            currency: payment.terms.currency.clone(),
            client_secret: Some(format!("{id}_secret_fake").into()),
            metadata: payment
                .terms
                .metadata()
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value))
                .collect(),
            last_error: None,
        };
        state.payments.insert(id.clone(), made.clone());
        state.by_key.insert(payment.idempotency_key.clone(), id);
        answer(&mut state, made)
    }

    async fn payment(&self, id: &PaymentId) -> Result<Option<ProviderPayment>, LineupError> {
        let state = self.enter("payment")?;
        Ok(state.payments.get(id.as_str()).cloned())
    }

    async fn cancel_payment(&self, id: &PaymentId) -> Result<Cancellation, LineupError> {
        let mut state = self.enter("cancel_payment")?;
        let paid_first = state.paid_at_cancel.iter().any(|paid| paid == id.as_str());
        let Some(stored) = state.payments.get_mut(id.as_str()) else {
            return Err(LineupError::Failed {
                store: Store::PaymentProvider,
                source: "no such payment".into(),
            });
        };
        if paid_first {
            stored.status = PaymentStatus::Succeeded;
        }
        let cancellation = match stored.status {
            PaymentStatus::Succeeded | PaymentStatus::Processing => {
                Cancellation::TooLate(stored.clone())
            }
            _ => {
                stored.status = PaymentStatus::Canceled;
                Cancellation::Canceled(stored.clone())
            }
        };
        answer(&mut state, cancellation)
    }

    async fn refund(&self, refund: &NewRefund) -> Result<ProviderRefund, LineupError> {
        let mut state = self.enter("refund")?;
        let known = state.refunds_by_key.get(&refund.refund_id).copied();
        if let Some(index) = known.filter(|_| !state.keys_ignored) {
            let made = state.refunds[index].clone();
            return answer(&mut state, made);
        }
        let made = ProviderRefund {
            id: format!("re_fake_{:04}", state.refunds.len() + 1),
            payment_id: refund.payment_id.clone(),
            amount: refund.amount,
            currency: refund.currency.clone(),
            status: state.refund_status.unwrap_or(RefundStatus::Succeeded),
            lineup_refund: Some(refund.refund_id.clone()),
        };
        state.refunds.push(made.clone());
        let index = state.refunds.len() - 1;
        state.refunds_by_key.insert(refund.refund_id.clone(), index);
        answer(&mut state, made)
    }

    async fn refunds_of(&self, payment: &PaymentId) -> Result<Vec<ProviderRefund>, LineupError> {
        let state = self.enter("refunds_of")?;
        Ok(state
            .refunds
            .iter()
            .filter(|refund| &refund.payment_id == payment)
            .cloned()
            .collect())
    }
}
