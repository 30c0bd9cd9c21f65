//! `lineup event cancel --event E [--yes]`: the event is cancelled, every paid order is refunded,
//! exactly once each.
//!
//! With `--yes`, in this order:
//! 1. the queue is closed for good with the reason `cancelled` (the durable record, then Redis;
//!    audit entry `close`): joins refused, the status says `cancelled`, nobody else admitted,
//!    and a hold by a customer admitted before gets 409 `event_cancelled` (`is_admitted.lua`);
//!    the event is never opened, changed or closed again;
//! 2. it waits for holds already past that check to be written (`--in-flight-wait`, the hold
//!    function's timeout);
//! 3. every open order (PENDING, or EXPIRED/RELEASED, which a late payment could still buy) is
//!    marked `cancelled_at` ([`DynamoLedger::stop_open_orders`]): checkout makes no payment for
//!    it (and cancels the one it made), and a payment for it settles REFUND_REQUIRED, not PAID;
//! 4. the event's PAID orders are found (a Scan, see [`DynamoLedger::paid_orders`]), the
//!    cancellation is kept in the audit trail (`cancel`, with the counts), then each PAID order
//!    becomes REFUND_REQUIRED with its payment's `refund_required` outbox event, in one
//!    transaction per order ([`lineup::adapters::dynamo::cancellation`]); the `refund` function
//!    then refunds each payment once. Seats stay SOLD.
//!
//! After step 3 no order of the event can become PAID, so one run refunds everything; running
//! it again is safe (it finds only what is new or failed, and does only that).
//!
//! Without `--yes` nothing changes: it says what it would do (the event's state and its count
//! of PAID orders) and exits 2.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use lineup::adapters::dynamo::cancellation::{
    CancellationProgress, CancellationReport, StoppedOrders,
};
use lineup::adapters::dynamo::DynamoLedger;
use lineup::domain::event_settings::EventSettings;
use lineup::domain::ids::EventId;

use crate::endpoints::EndpointArgs;
use crate::event_admin::{self, AdminError, EventAdmin};

/// `lineup event cancel`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct CancelArgs {
    /// The event to cancel.
    #[arg(long)]
    pub event: String,
    /// Do it. Without this flag nothing changes: the command prints what it would do (how many
    /// PAID orders would be refunded) and exits 2.
    #[arg(long)]
    pub yes: bool,
    /// How long to wait, after the close, for holds already admitted to finish writing before
    /// the open orders are marked: the hold function's timeout (template.yaml's Globals).
    #[arg(long, default_value = "11s", value_parser = humantime::parse_duration)]
    pub in_flight_wait: Duration,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// What `cancel` did.
#[derive(Debug, Clone)]
pub enum Cancellation {
    /// No `--yes`: nothing changed.
    Refused {
        /// The event's settings now (its durable record, else the cache's copy).
        settings: EventSettings,
        /// How many of its orders are PAID now: the refunds it would record.
        paid_orders: usize,
    },
    /// The queue is closed and the paid orders were dealt with.
    Done {
        /// The event's settings, closed.
        settings: EventSettings,
        /// What became of the open orders (no longer payable).
        stopped: StoppedOrders,
        /// What became of each PAID order.
        report: CancellationReport,
    },
}

/// Cancels `event` (with `confirmed`; otherwise only counts its PAID orders), waiting
/// `in_flight` between the close and the marking of open orders, telling `progress` after each
/// PAID order. An unknown event is refused before anything changes.
pub async fn cancel(
    ledger: &DynamoLedger,
    admin: &EventAdmin<'_>,
    event: &EventId,
    confirmed: bool,
    in_flight: Duration,
    now: SystemTime,
    progress: &mut (dyn FnMut(&CancellationProgress) + Send),
) -> Result<Cancellation, AdminError> {
    if !confirmed {
        let settings = match admin.records.event(event).await? {
            Some(record) => record.settings,
            None => admin
                .store
                .settings(event)
                .await?
                .ok_or_else(|| AdminError::UnknownEvent(event.as_str().to_owned()))?,
        };
        let paid_orders = ledger.paid_orders(event).await?.count();
        return Ok(Cancellation::Refused {
            settings,
            paid_orders,
        });
    }
    // The sales first: no hold from now on (a hold already past the check is written within
    // the hold function's timeout), then no payment can make an open order PAID.
    let settings = admin.cancel_sales(event, now).await?;
    tokio::time::sleep(in_flight).await;
    let stopped = ledger.stop_open_orders(event, now).await?;
    let found = ledger.paid_orders(event).await?;
    // A millisecond after the close's entry: entries of the same millisecond are listed in no
    // particular order, and the history should read close, then cancel.
    admin
        .record(
            event,
            "cancel",
            serde_json::json!({
                "paidOrders": found.count(),
                "openOrdersStopped": stopped.marked.len(),
                "seats": "stay SOLD",
                "refunds": "one refund_required per paid order's payment",
            }),
            now + Duration::from_millis(1),
        )
        .await?;
    let report = ledger.require_refunds(found, now, progress).await?;
    Ok(Cancellation::Done {
        settings,
        stopped,
        report,
    })
}

/// Runs the command as `operator`: 0 when every PAID order is dealt with, 1 when any failed
/// (they stay PAID: run it again), 2 when refused without `--yes` (errors: 2, from `main`).
pub async fn run(
    args: &CancelArgs,
    operator: String,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let event = EventId::parse(&args.event)
        .map_err(|_| format!("{:?} is not a valid event id", args.event))?;
    // DynamoDB first: with `--aws`, a sign-in or region problem is reported before anything.
    let records = args.endpoints.records().await?;
    let ledger = args.endpoints.ledger().await?;
    let queue = args.endpoints.queue().await?;
    let admin = EventAdmin::new(&queue, &records, operator);
    let mut printer = ProgressLine::new();
    let cancellation = cancel(
        &ledger,
        &admin,
        &event,
        args.yes,
        args.in_flight_wait,
        SystemTime::now(),
        &mut |progress| printer.show(progress),
    )
    .await?;
    printer.finish();
    print!("{}", describe(&event, &cancellation));
    Ok(ExitCode::from(exit_code(&cancellation)))
}

/// 0: done, every order recorded or skipped; 1: some failed; 2: refused (no `--yes`).
pub fn exit_code(cancellation: &Cancellation) -> u8 {
    match cancellation {
        Cancellation::Refused { .. } => 2,
        Cancellation::Done {
            report, stopped, ..
        } if !report.is_complete() || !stopped.failed.is_empty() => 1,
        Cancellation::Done { .. } => 0,
    }
}

/// What the command prints after the progress line.
pub fn describe(event: &EventId, cancellation: &Cancellation) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    match cancellation {
        Cancellation::Refused {
            settings,
            paid_orders,
        } => {
            line("nothing done: `lineup event cancel` needs --yes. With it, it would:".to_owned());
            line(format!(
                "  close the queue of event {event} for good (now {}): joins refused, the status says cancelled, nobody else admitted, no more holds;",
                settings.state.as_str()
            ));
            line("  make every open order unpayable (a payment for one is refunded);".to_owned());
            line(format!(
                "  record a refund for each of its {paid_orders} PAID orders (each order REFUND_REQUIRED with one refund_required event for its payment; the refund function pays it back once);"
            ));
            line("  leave the seats SOLD.".to_owned());
        }
        Cancellation::Done {
            settings,
            stopped,
            report,
        } => {
            line(event_admin::describe(event, settings));
            line(format!(
                "open orders stopped: {} of {} found (a payment for them is refunded, never sold)",
                stopped.marked.len(),
                stopped.found
            ));
            for failed in &stopped.failed {
                line(format!(
                    "  not stopped (run again): {}: {}",
                    failed.order_id, failed.error
                ));
            }
            line(format!("PAID orders found: {}", report.found));
            line(format!(
                "refund_required recorded: {} (orders now REFUND_REQUIRED; seats stay SOLD)",
                report.recorded.len()
            ));
            line(format!(
                "skipped (no longer PAID when their turn came): {}",
                report.skipped.len()
            ));
            for order in &report.skipped {
                line(format!("  {order}"));
            }
            line(format!(
                "failed (still PAID; run again): {}",
                report.failed.len()
            ));
            for failed in &report.failed {
                line(format!("  {}: {}", failed.order_id, failed.error));
            }
            line(
                "no more holds or sales: a payment still completing for a stopped order is refunded when it settles".to_owned(),
            );
        }
    }
    out
}

/// The progress line on stderr: rewritten in place on a terminal (at most 10 times a second),
/// else one line a second, and always the last.
struct ProgressLine {
    terminal: bool,
    last: Option<Instant>,
    shown: Option<CancellationProgress>,
}

impl ProgressLine {
    fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            last: None,
            shown: None,
        }
    }

    fn text(progress: &CancellationProgress) -> String {
        let mut text = format!(
            "refund_required recorded: {}/{}",
            progress.recorded, progress.total
        );
        if progress.skipped > 0 {
            text.push_str(&format!(", skipped {}", progress.skipped));
        }
        if progress.failed > 0 {
            text.push_str(&format!(", failed {}", progress.failed));
        }
        text
    }

    fn show(&mut self, progress: &CancellationProgress) {
        if progress.total == 0 {
            return;
        }
        let every = if self.terminal {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(1)
        };
        let last = progress.done == progress.total;
        if !last && self.last.is_some_and(|at| at.elapsed() < every) {
            return;
        }
        self.last = Some(Instant::now());
        self.shown = Some(*progress);
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal {
            write!(err, "\r{}", Self::text(progress))
        } else {
            writeln!(err, "{}", Self::text(progress))
        };
        let _ = err.flush();
    }

    fn finish(&mut self) {
        if self.terminal && self.shown.is_some() {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lineup::adapters::dynamo::cancellation::FailedOrder;

    fn settings() -> EventSettings {
        EventSettings::opening_at(SystemTime::UNIX_EPOCH)
    }

    #[test]
    fn the_exit_code_says_refused_failed_or_done() {
        let refused = Cancellation::Refused {
            settings: settings(),
            paid_orders: 3,
        };
        assert_eq!(exit_code(&refused), 2);
        let mut report = CancellationReport {
            found: 2,
            recorded: vec!["a".into()],
            skipped: vec!["b".into()],
            failed: Vec::new(),
        };
        let done = |report: &CancellationReport| Cancellation::Done {
            settings: settings(),
            stopped: StoppedOrders::default(),
            report: report.clone(),
        };
        assert_eq!(exit_code(&done(&report)), 0);
        report.failed.push(FailedOrder {
            order_id: "c".into(),
            error: "throttled".into(),
        });
        assert_eq!(exit_code(&done(&report)), 1);
        let printed = describe(&EventId::parse("gala").unwrap(), &done(&report));
        assert!(printed.contains("refund_required recorded: 1"), "{printed}");
        assert!(printed.contains("  c: throttled"), "{printed}");
        let printed = describe(&EventId::parse("gala").unwrap(), &refused);
        assert!(printed.contains("its 3 PAID orders"), "{printed}");
    }

    #[test]
    fn the_progress_line_counts_what_was_recorded_of_all() {
        let progress = CancellationProgress {
            done: 125,
            total: 340,
            recorded: 120,
            skipped: 5,
            failed: 0,
        };
        assert_eq!(
            ProgressLine::text(&progress),
            "refund_required recorded: 120/340, skipped 5"
        );
    }
}
