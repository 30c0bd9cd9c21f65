//! `lineup payments reconcile --event E`: the `reconcile` function's run, on demand, for one
//! event: every order of it with an open payment is looked at again through the provider (a
//! lost webhook's payment settled, an in-progress payment's hold kept, a lapsed hold's payment
//! cancelled before its seats go back), and what it settled is printed.

use lineup::adapters::stripe::{StripeApiKey, StripeProvider};
use lineup::application::ports::ledger::{OpenPayments, PaymentLedger};
use lineup::application::reconcile::{reconcile, ReconcilePorts, ReconcileReport};
use lineup::domain::clock::SystemClock;
use lineup::domain::ids::EventId;

use crate::endpoints::{EndpointArgs, EndpointError};

/// `lineup payments ...`.
#[derive(Debug, clap::Subcommand)]
pub enum PaymentsAction {
    /// Look at every open payment of an event again through the provider, now, and settle,
    /// keep or end each order as the webhook would (what `reconcile` does every minute).
    Reconcile(ReconcileArgs),
}

/// `lineup payments reconcile`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ReconcileArgs {
    /// The event whose open payments to reconcile.
    #[arg(long)]
    pub event: String,
    /// Where Stripe's API is (`https://api.stripe.com`; locally `lineup dev` or localstripe).
    #[arg(
        long,
        env = "STRIPE_API_BASE",
        default_value = "https://api.stripe.com"
    )]
    pub stripe_api_base: String,
    /// Lineup's Stripe secret key (`sk_...`, or a restricted `rk_...` with PaymentIntents read and
    /// write). Read from the environment only, never a flag: it must not reach the shell history.
    #[arg(skip = std::env::var("LINEUP_STRIPE_API_KEY").unwrap_or_default())]
    pub stripe_api_key: String,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// Why it could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{0} is not an event id")]
    Event(String),
    #[error("set LINEUP_STRIPE_API_KEY to Lineup's Stripe key (sk_... or rk_...)")]
    Key(#[source] lineup::adapters::stripe::InvalidApiKey),
    #[error("could not make the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error(transparent)]
    Endpoints(#[from] EndpointError),
    #[error(transparent)]
    Lineup(#[from] lineup::application::error::LineupError),
}

/// Runs `action`; the report, as printed.
pub async fn run(action: &PaymentsAction) -> Result<String, ReconcileError> {
    let PaymentsAction::Reconcile(args) = action;
    let event =
        EventId::parse(&args.event).map_err(|_| ReconcileError::Event(args.event.clone()))?;
    let key = StripeApiKey::new(args.stripe_api_key.clone()).map_err(ReconcileError::Key)?;
    let provider =
        StripeProvider::open(args.stripe_api_base.clone(), key).map_err(ReconcileError::Client)?;
    let ledger = args.endpoints.ledger().await?;
    let ports = ReconcilePorts {
        orders: &ledger as &dyn OpenPayments,
        ledger: &ledger as &dyn PaymentLedger,
        refunds: &ledger,
        provider: &provider,
        clock: &SystemClock,
    };
    let report = reconcile(&ports, Some(&event)).await?;
    Ok(describe(&event, &report))
}

/// The report, a line per settled order.
pub fn describe(event: &EventId, report: &ReconcileReport) -> String {
    let mut text = format!(
        "event {event}: {} open payments looked at; {} settled, {} holds kept, {} orders ended; {} pending refunds looked at (every event's), {} finished; {} failed (run again)",
        report.checked,
        report.settled.len(),
        report.extended,
        report.ended,
        report.refunds_checked,
        report.refunds_settled,
        report.failed
    );
    for settled in &report.settled {
        text.push_str(&format!(
            "\n  settled  order {}  payment {}  {}",
            settled.order_id,
            settled.payment_id,
            settled.status.as_str()
        ));
    }
    text
}
