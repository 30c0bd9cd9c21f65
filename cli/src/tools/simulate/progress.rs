//! What the crowd is doing right now, while the simulation runs: live counters the customers
//! bump, drawn as progress bars on a terminal, as a line every few seconds when stderr is not
//! one (logs, CI), or not at all (`--no-progress`).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;

/// Counters the customers update as they go (current ones can go down, totals only up).
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// In the queue now.
    pub waiting: AtomicI64,
    /// Admitted and shopping (or paying) now.
    pub shopping: AtomicI64,
    /// Admitted so far.
    pub admitted: AtomicU64,
    /// Customers finished.
    pub done: AtomicU64,
    /// Seats of orders customers have seen PAID.
    pub seats_sold: AtomicU64,
    pub orders_paid: AtomicU64,
    pub holds_won: AtomicU64,
    pub holds_lost: AtomicU64,
}

impl LiveCounters {
    pub fn add(counter: &AtomicI64, delta: i64) {
        counter.fetch_add(delta, Ordering::Relaxed);
    }

    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    fn current(counter: &AtomicI64) -> u64 {
        counter.load(Ordering::Relaxed).max(0) as u64
    }
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    Bars,
    Lines,
    Off,
}

impl ProgressMode {
    pub fn choose(disabled: bool) -> Self {
        if disabled {
            Self::Off
        } else if std::io::stderr().is_terminal() {
            Self::Bars
        } else {
            Self::Lines
        }
    }
}

/// Says lines above the progress display, from any task.
#[derive(Clone)]
pub struct Notes {
    mode: ProgressMode,
    multi: MultiProgress,
    started: Instant,
    always: bool,
}

impl Notes {
    /// Says nothing (for tests).
    #[cfg(test)]
    pub fn silent() -> Self {
        Self {
            mode: ProgressMode::Off,
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
            started: Instant::now(),
            always: false,
        }
    }

    pub fn note(&self, message: &str) {
        let stamped = || format!("[{:>4}s] {message}", self.started.elapsed().as_secs());
        match self.mode {
            ProgressMode::Bars => {
                // Printing fails only when stderr is gone; there is nobody to tell then.
                let _ = self.multi.println(message);
            }
            ProgressMode::Lines => eprintln!("{}", stamped()),
            ProgressMode::Off if self.always => eprintln!("{}", stamped()),
            ProgressMode::Off => {}
        }
    }
}

/// The display, refreshed by a background task until [`Progress::finish`].
pub struct Progress {
    mode: ProgressMode,
    multi: MultiProgress,
    status: ProgressBar,
    done: ProgressBar,
    sold: ProgressBar,
    ticker: JoinHandle<()>,
    started: Instant,
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("█▉▊▋▌▍▎▏ ")
}

impl Progress {
    pub fn start(
        mode: ProgressMode,
        users: usize,
        seats: usize,
        counters: Arc<LiveCounters>,
    ) -> Self {
        let target = match mode {
            ProgressMode::Bars => ProgressDrawTarget::stderr(),
            ProgressMode::Lines | ProgressMode::Off => ProgressDrawTarget::hidden(),
        };
        let multi = MultiProgress::with_draw_target(target);
        let status = multi
            .add(ProgressBar::new_spinner().with_style(style("{spinner} {elapsed_precise} {msg}")));
        let done = multi.add(
            ProgressBar::new(users as u64)
                .with_style(style("  customers done {bar:30} {pos}/{len}")),
        );
        let sold = multi.add(
            ProgressBar::new(seats as u64)
                .with_style(style("  seats sold     {bar:30} {pos}/{len} {msg}")),
        );
        status.enable_steady_tick(Duration::from_millis(120));
        let started = Instant::now();
        let ticker = {
            let (status, done, sold) = (status.clone(), done.clone(), sold.clone());
            tokio::spawn(async move {
                let mut last_line = Instant::now();
                loop {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    let c = &counters;
                    let line = format!(
                        "waiting {} · shopping {} · admitted {} · holds won {} lost {} · paid {}",
                        LiveCounters::current(&c.waiting),
                        LiveCounters::current(&c.shopping),
                        LiveCounters::get(&c.admitted),
                        LiveCounters::get(&c.holds_won),
                        LiveCounters::get(&c.holds_lost),
                        LiveCounters::get(&c.orders_paid),
                    );
                    done.set_position(LiveCounters::get(&c.done));
                    sold.set_position(LiveCounters::get(&c.seats_sold));
                    if mode == ProgressMode::Lines && last_line.elapsed() >= Duration::from_secs(5)
                    {
                        last_line = Instant::now();
                        eprintln!(
                            "[{:>4}s] {line} · done {}/{users} · seats sold {}/{seats}",
                            started.elapsed().as_secs(),
                            LiveCounters::get(&c.done),
                            LiveCounters::get(&c.seats_sold),
                        );
                    }
                    status.set_message(line);
                }
            })
        };
        Self {
            mode,
            multi,
            status,
            done,
            sold,
            ticker,
            started,
        }
    }

    /// A line above the bars (or on its own without them).
    pub fn note(&self, message: &str) {
        self.notes(false).note(message);
    }

    /// A handle for saying lines from another task, as [`Progress::note`] does. `always`: said
    /// on stderr even with `--no-progress` (what the run does to the stack, such as a chaos
    /// fault, is worth a line in any case).
    pub fn notes(&self, always: bool) -> Notes {
        Notes {
            mode: self.mode,
            multi: self.multi.clone(),
            started: self.started,
            always,
        }
    }

    /// After the customers: say what is being waited for now.
    pub fn phase(&self, message: &str) {
        self.sold.set_message("(customers' view)");
        self.note(message);
    }

    pub fn finish(self) {
        self.ticker.abort();
        self.status.finish_and_clear();
        self.done.finish();
        self.sold.finish();
    }
}
