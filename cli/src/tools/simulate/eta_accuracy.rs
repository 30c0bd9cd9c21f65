//! How right the waiting room's ETAs were: each admission time a customer was given, against the
//! moment it saw its number called (the first status read showing `servingUpTo` at or past it,
//! or the claim). Measured at join (the first ETA the status gave with a number: read at once
//! after the join, as the page does, or for a pre-queue entrant the first status read after it
//! found its number in the draw) and along the wait (every status read before the call), in
//! seconds and relative to the actual wait from the prediction to the call (ADR 0029's goal:
//! p90 at most a quarter, and at most 60 s for waits under 4 minutes: both are reported). The
//! call is seen at a status read, so it is known only to within the read interval (5 s near
//! the front) and the status's cache age (2 s).

use std::time::Duration;

use serde::Serialize;

use super::latency::percentile;
use super::waiting::{PredictionSource, WaitLog};

/// The errors of one kind of prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EtaError {
    pub predictions: usize,
    /// Of |predicted − called|, in seconds.
    pub p50_seconds: f64,
    pub p90_seconds: f64,
    /// The share predicted earlier than the call (the customer was told too little).
    pub early_share: f64,
    /// Of |predicted − called| ÷ (called − predicted at): the error relative to the actual wait.
    pub p50_relative: f64,
    pub p90_relative: f64,
    /// The p90 of |predicted − called| in seconds over the waits (from the prediction) under
    /// [`SHORT_WAIT`]; `None` if there were none.
    pub short_waits_p90_seconds: Option<f64>,
    /// The p90 of the relative error over the waits (from the prediction) of [`SHORT_WAIT`] or
    /// more, the ones the goal judges relative to the wait; `None` if there were none.
    pub long_waits_p90_relative: Option<f64>,
}

/// A wait under this long is judged by its error in seconds (at most 60 s), not relative.
pub const SHORT_WAIT: Duration = Duration::from_secs(240);

/// One prediction judged: predicted − called, and the actual wait from the prediction, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Judged {
    error: f64,
    wait: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EtaAccuracy {
    /// Customers whose number was called while they watched.
    pub called: usize,
    pub at_join: Option<EtaError>,
    pub along_the_wait: Option<EtaError>,
}

impl EtaError {
    /// From judged predictions; `None` for none.
    fn of(judged: &[Judged]) -> Option<Self> {
        let sorted = |values: Vec<f64>| {
            let mut durations: Vec<Duration> =
                values.into_iter().map(Duration::from_secs_f64).collect();
            durations.sort_unstable();
            durations
        };
        let sizes = sorted(judged.iter().map(|j| j.error.abs()).collect());
        // Relative errors as durations (a second standing for 1), so they sort and take
        // percentiles as the errors do.
        let relative = sorted(
            judged
                .iter()
                .map(|j| j.error.abs() / j.wait.max(1.0))
                .collect(),
        );
        let short = sorted(
            judged
                .iter()
                .filter(|j| j.wait < SHORT_WAIT.as_secs_f64())
                .map(|j| j.error.abs())
                .collect(),
        );
        let long = sorted(
            judged
                .iter()
                .filter(|j| j.wait >= SHORT_WAIT.as_secs_f64())
                .map(|j| j.error.abs() / j.wait)
                .collect(),
        );
        let at = |values: &[Duration], p| percentile(values, p).map(|d: Duration| d.as_secs_f64());
        Some(Self {
            predictions: judged.len(),
            p50_seconds: at(&sizes, 50.0)?,
            p90_seconds: at(&sizes, 90.0)?,
            early_share: judged.iter().filter(|j| j.error < 0.0).count() as f64
                / judged.len() as f64,
            p50_relative: at(&relative, 50.0)?,
            p90_relative: at(&relative, 90.0)?,
            short_waits_p90_seconds: at(&short, 90.0),
            long_waits_p90_relative: at(&long, 90.0),
        })
    }
}

impl EtaAccuracy {
    pub fn of<'a>(waits: impl IntoIterator<Item = &'a WaitLog>) -> Self {
        let (mut called, mut at_join, mut along) = (0, Vec::new(), Vec::new());
        for wait in waits {
            let Some(called_at) = wait.called_at else {
                continue;
            };
            called += 1;
            let judge = |p: &super::waiting::Prediction| Judged {
                error: if p.admission_at >= called_at {
                    (p.admission_at - called_at).as_secs_f64()
                } else {
                    -(called_at - p.admission_at).as_secs_f64()
                },
                wait: called_at.saturating_duration_since(p.made_at).as_secs_f64(),
            };
            let from_status = || {
                wait.predictions
                    .iter()
                    .filter(|p| p.source == PredictionSource::Status)
            };
            if let Some(first) = from_status().next() {
                at_join.push(judge(first));
            }
            along.extend(from_status().map(judge));
        }
        Self {
            called,
            at_join: EtaError::of(&at_join),
            along_the_wait: EtaError::of(&along),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::waiting::Prediction;
    use super::*;

    fn prediction(start: Instant, made: u64, due: u64, source: PredictionSource) -> Prediction {
        Prediction {
            made_at: start + Duration::from_secs(made),
            admission_at: start + Duration::from_secs(due),
            source,
        }
    }

    #[test]
    fn errors_are_against_the_call_at_join_and_along_the_wait() {
        let start = Instant::now();
        let called = |at: u64, predictions: Vec<Prediction>| WaitLog {
            called_at: Some(start + Duration::from_secs(at)),
            predictions,
            ..WaitLog::default()
        };
        let waits = [
            // Told 100 s at join, called at 130: 30 s early; then 110 (20 early) and 125 (5 early).
            called(
                130,
                vec![
                    prediction(start, 0, 100, PredictionSource::Answer),
                    prediction(start, 50, 110, PredictionSource::Status),
                    prediction(start, 100, 125, PredictionSource::Status),
                ],
            ),
            // A pre-queue entrant: its first ETA is a status read's; called 10 s before it.
            called(
                40,
                vec![prediction(start, 20, 50, PredictionSource::Status)],
            ),
            // Never called while watching (left): not counted.
            WaitLog {
                predictions: vec![prediction(start, 0, 10, PredictionSource::Answer)],
                ..WaitLog::default()
            },
        ];
        let accuracy = EtaAccuracy::of(&waits);
        assert_eq!(accuracy.called, 2);
        // At join: the first ETA the status gave (the join's own answer is not judged): 20 s
        // early of an 80 s wait, and the entrant's 10 s late of a 20 s wait.
        let at_join = accuracy.at_join.unwrap();
        assert_eq!(at_join.predictions, 2);
        assert_eq!((at_join.p50_seconds, at_join.p90_seconds), (10.0, 20.0));
        assert_eq!(at_join.early_share, 0.5);
        assert_eq!((at_join.p50_relative, at_join.p90_relative), (0.25, 0.5));
        assert_eq!(at_join.short_waits_p90_seconds, Some(20.0));
        assert_eq!(
            at_join.long_waits_p90_relative, None,
            "no wait of 4 minutes"
        );
        // Along the wait: every status read's (20 s of 80, 5 of 30, 10 of 20).
        let along = accuracy.along_the_wait.unwrap();
        assert_eq!(along.predictions, 3);
        assert_eq!((along.p50_seconds, along.p90_seconds), (10.0, 20.0));
        assert_eq!(along.early_share, 2.0 / 3.0);
        assert_eq!((along.p50_relative, along.p90_relative), (0.25, 0.5));
    }

    #[test]
    fn long_waits_are_judged_relative_and_short_ones_in_seconds() {
        let start = Instant::now();
        // Told at 0 to expect the call at 1,000 s, called at 1,200: 200 s is a sixth of it.
        let waits = [WaitLog {
            called_at: Some(start + Duration::from_secs(1_200)),
            predictions: vec![prediction(start, 0, 1_000, PredictionSource::Status)],
            ..WaitLog::default()
        }];
        let at_join = EtaAccuracy::of(&waits).at_join.unwrap();
        assert_eq!(at_join.p90_seconds, 200.0);
        assert!((at_join.p90_relative - 1.0 / 6.0).abs() < 1e-6);
        assert_eq!(
            at_join.short_waits_p90_seconds, None,
            "no wait under 4 minutes"
        );
        let long = at_join.long_waits_p90_relative.unwrap();
        assert!((long - 1.0 / 6.0).abs() < 1e-6, "{long}");
    }

    #[test]
    fn nobody_called_means_no_figures() {
        let accuracy = EtaAccuracy::of(&[WaitLog::default()]);
        assert_eq!(accuracy.called, 0);
        assert!(accuracy.at_join.is_none() && accuracy.along_the_wait.is_none());
    }
}
