//! How right the waiting room's ETAs were: each admission time a customer was given, against the
//! moment it saw its number called (the first status read showing `servingUpTo` at or past it,
//! or the claim). Measured at join (the first ETA with a number: the join's answer, or for a
//! pre-queue entrant the first status read after it found its number in the draw) and along the
//! wait (every status read before the call). The call is seen at a status read, so it is known
//! only to within the read interval (5 s near the front) and the status's cache age (2 s).

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
    /// From signed errors (predicted − called); `None` for none.
    fn of(errors: &[f64]) -> Option<Self> {
        let mut sizes: Vec<Duration> = errors
            .iter()
            .map(|error| Duration::from_secs_f64(error.abs()))
            .collect();
        sizes.sort_unstable();
        let seconds = |p| percentile(&sizes, p).map(|d: Duration| d.as_secs_f64());
        Some(Self {
            predictions: errors.len(),
            p50_seconds: seconds(50.0)?,
            p90_seconds: seconds(90.0)?,
            early_share: errors.iter().filter(|error| **error < 0.0).count() as f64
                / errors.len() as f64,
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
            let error = |admission_at: std::time::Instant| {
                if admission_at >= called_at {
                    (admission_at - called_at).as_secs_f64()
                } else {
                    -(called_at - admission_at).as_secs_f64()
                }
            };
            if let Some(first) = wait.predictions.first() {
                at_join.push(error(first.admission_at));
            }
            along.extend(
                wait.predictions
                    .iter()
                    .filter(|p| p.source == PredictionSource::Status)
                    .map(|p| error(p.admission_at)),
            );
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
        let at_join = accuracy.at_join.unwrap();
        assert_eq!(at_join.predictions, 2);
        assert_eq!((at_join.p50_seconds, at_join.p90_seconds), (10.0, 30.0));
        assert_eq!(at_join.early_share, 0.5);
        let along = accuracy.along_the_wait.unwrap();
        assert_eq!(along.predictions, 3);
        assert_eq!((along.p50_seconds, along.p90_seconds), (10.0, 20.0));
        assert_eq!(along.early_share, 2.0 / 3.0);
    }

    #[test]
    fn nobody_called_means_no_figures() {
        let accuracy = EtaAccuracy::of(&[WaitLog::default()]);
        assert_eq!(accuracy.called, 0);
        assert!(accuracy.at_join.is_none() && accuracy.along_the_wait.is_none());
    }
}
