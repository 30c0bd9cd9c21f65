//! Every answer the crowd got, in time (kept only for a chaos run, `--chaos`), and what each
//! fault cost: per route, how many answers were 503 (and 404, and other errors) from the fault
//! until the next one (or the crowd's end), and how long after the fault the first request sent
//! after it succeeded again: the seconds of 503 a cache loss costs customers.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

/// One answer (or none: a request that got no answer at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub route: &'static str,
    pub sent: Instant,
    pub answered: Instant,
    /// The HTTP status; `None`: no answer.
    pub status: Option<u16>,
    /// The error body's `error.code`, when it is an error with one.
    pub code: Option<String>,
}

impl Recorded {
    fn succeeded(&self) -> bool {
        self.status
            .is_some_and(|status| (200..300).contains(&status))
    }
}

/// The answers, as they come (shared by every customer through the API client).
#[derive(Debug, Default)]
pub struct AnswerLog {
    answers: Mutex<Vec<Recorded>>,
}

impl AnswerLog {
    pub fn record(&self, answer: Recorded) {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(answer);
    }

    pub fn answers(&self) -> Vec<Recorded> {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// What one route got from a fault until the next fault (or the crowd's end).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteImpact {
    pub route: String,
    /// Answers (or failures to answer) that came in the window.
    pub answers: usize,
    /// 2xx.
    pub succeeded: usize,
    /// 503 (each one retried after its `Retry-After`).
    pub unavailable: usize,
    pub not_found: usize,
    /// Other 4xx and 5xx (a 409 `seats_unavailable` is one: not all are faults).
    pub other_errors: usize,
    /// Requests that got no answer at all.
    pub no_answer: usize,
    /// Requests sent in the window (answered in it or later).
    pub sent: usize,
    /// Non-2xx answers by `<status> <error code>`.
    pub errors: BTreeMap<String, usize>,
    /// From the fault to the first 2xx answer to a request sent after it (`None`: none in the
    /// window, or none sent).
    pub first_success_seconds: Option<f64>,
    /// From the fault to the last 503 in the window.
    pub last_unavailable_seconds: Option<f64>,
}

/// What a fault cost, route by route.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultImpact {
    /// From the fault to the next one, or to the crowd's end.
    pub window_seconds: f64,
    /// 503 answers in the window, all routes.
    pub unavailable: usize,
    /// From the fault to the last 503 in the window (`None`: no 503).
    pub unavailable_for_seconds: Option<f64>,
    /// Routes that answered in the window (or had a request in flight), by key.
    pub routes: Vec<RouteImpact>,
}

impl FaultImpact {
    /// The route's row, if it answered in the window.
    pub fn route(&self, key: &str) -> Option<&RouteImpact> {
        self.routes.iter().find(|route| route.route == key)
    }
}

/// Each fault's impact: the window of fault `i` runs from `faults[i]` to `faults[i + 1]` (or
/// `end`); `faults` in time order.
pub fn impacts(answers: &[Recorded], faults: &[Instant], end: Instant) -> Vec<FaultImpact> {
    faults
        .iter()
        .enumerate()
        .map(|(i, &from)| {
            let until = faults.get(i + 1).copied().unwrap_or(end).max(from);
            impact(answers, from, until)
        })
        .collect()
}

fn impact(answers: &[Recorded], from: Instant, until: Instant) -> FaultImpact {
    let seconds_after = |at: Instant| at.saturating_duration_since(from).as_secs_f64();
    let mut routes: BTreeMap<&'static str, RouteImpact> = BTreeMap::new();
    for answer in answers {
        let answered_in = answer.answered >= from && answer.answered < until;
        let sent_after = answer.sent >= from && answer.sent < until;
        if !answered_in && !sent_after {
            continue;
        }
        let row = routes.entry(answer.route).or_insert_with(|| RouteImpact {
            route: answer.route.to_owned(),
            answers: 0,
            succeeded: 0,
            unavailable: 0,
            not_found: 0,
            other_errors: 0,
            no_answer: 0,
            sent: 0,
            errors: BTreeMap::new(),
            first_success_seconds: None,
            last_unavailable_seconds: None,
        });
        row.sent += usize::from(sent_after);
        // The first success of a request sent after the fault, whenever it was answered (a slow
        // answer after the window still tells how long the route took to come back).
        if sent_after && answer.succeeded() {
            let after = seconds_after(answer.answered);
            if row.first_success_seconds.is_none_or(|first| after < first) {
                row.first_success_seconds = Some(after);
            }
        }
        if !answered_in {
            continue;
        }
        row.answers += 1;
        match answer.status {
            None => row.no_answer += 1,
            Some(200..=299) => row.succeeded += 1,
            Some(503) => {
                row.unavailable += 1;
                let after = seconds_after(answer.answered);
                if row.last_unavailable_seconds.is_none_or(|last| after > last) {
                    row.last_unavailable_seconds = Some(after);
                }
            }
            Some(404) => row.not_found += 1,
            Some(_) => row.other_errors += 1,
        }
        if !answer.succeeded() {
            let status = answer
                .status
                .map_or_else(|| "no answer".to_owned(), |status| status.to_string());
            let key = match &answer.code {
                Some(code) => format!("{status} {code}"),
                None => status,
            };
            *row.errors.entry(key).or_default() += 1;
        }
    }
    let routes: Vec<RouteImpact> = routes.into_values().collect();
    FaultImpact {
        window_seconds: until.saturating_duration_since(from).as_secs_f64(),
        unavailable: routes.iter().map(|route| route.unavailable).sum(),
        unavailable_for_seconds: routes
            .iter()
            .filter_map(|route| route.last_unavailable_seconds)
            .reduce(f64::max),
        routes,
    }
}

/// `seconds` as `+1.2 s`, or `none` when absent.
pub fn seconds_or_none(seconds: Option<f64>) -> String {
    seconds.map_or_else(|| "none".to_owned(), |s| format!("+{s:.1} s"))
}

impl RouteImpact {
    /// When the route first succeeded after the fault: `+1.2 s`, `none` (requests were sent,
    /// none succeeded in the window), or `not sent`.
    pub fn first_success(&self) -> String {
        if self.sent == 0 && self.first_success_seconds.is_none() {
            "not sent".to_owned()
        } else {
            seconds_or_none(self.first_success_seconds)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const STATUS: &str = "GET /events/{eventId}/status";
    const JOIN: &str = "POST /events/{eventId}/queue";

    struct At(Instant);

    impl At {
        fn s(&self, seconds: f64) -> Instant {
            self.0 + Duration::from_secs_f64(seconds)
        }

        fn answer(
            &self,
            route: &'static str,
            sent: f64,
            answered: f64,
            status: Option<u16>,
            code: Option<&str>,
        ) -> Recorded {
            Recorded {
                route,
                sent: self.s(sent),
                answered: self.s(answered),
                status,
                code: code.map(str::to_owned),
            }
        }
    }

    #[test]
    fn each_fault_counts_what_came_until_the_next_and_when_each_route_came_back() {
        let at = At(Instant::now());
        let answers = vec![
            // Before the first fault: not counted.
            at.answer(STATUS, 1.0, 1.1, Some(200), None),
            // After the flush at 10 s.
            at.answer(STATUS, 10.0, 10.2, Some(503), Some("queue_recovering")),
            at.answer(STATUS, 12.0, 12.1, Some(503), Some("queue_recovering")),
            at.answer(JOIN, 10.5, 10.6, Some(404), Some("event_not_found")),
            // Sent before the flush, answered after: counted, but no proof of recovery.
            at.answer(STATUS, 9.9, 10.1, Some(200), None),
            at.answer(STATUS, 13.0, 13.5, Some(200), None),
            at.answer(JOIN, 14.0, 14.2, Some(201), None),
            // A hold answered 409: a working answer, not a success.
            at.answer(
                "POST /events/{eventId}/holds",
                15.0,
                15.1,
                Some(409),
                Some("seats_unavailable"),
            ),
            // After the restart at 20 s.
            at.answer(JOIN, 20.0, 20.3, None, None),
            at.answer(JOIN, 21.0, 21.5, Some(201), None),
        ];
        let found = impacts(&answers, &[at.s(10.0), at.s(20.0)], at.s(30.0));
        assert_eq!(found.len(), 2);

        let flush = &found[0];
        assert_eq!(flush.window_seconds, 10.0);
        assert_eq!(flush.unavailable, 2);
        assert!((flush.unavailable_for_seconds.unwrap() - 2.1).abs() < 1e-9);
        let status = flush.route(STATUS).unwrap();
        assert_eq!(
            (status.answers, status.succeeded, status.unavailable),
            (4, 2, 2)
        );
        assert!((status.first_success_seconds.unwrap() - 3.5).abs() < 1e-9);
        assert_eq!(status.errors["503 queue_recovering"], 2);
        let join = flush.route(JOIN).unwrap();
        assert_eq!((join.answers, join.not_found, join.succeeded), (2, 1, 1));
        assert!((join.first_success_seconds.unwrap() - 4.2).abs() < 1e-9);
        let holds = flush.route("POST /events/{eventId}/holds").unwrap();
        assert_eq!((holds.other_errors, holds.first_success_seconds), (1, None));
        assert_eq!(holds.first_success(), "none");
        assert_eq!(status.first_success(), "+3.5 s");

        let restart = &found[1];
        assert_eq!(restart.unavailable_for_seconds, None);
        let join = restart.route(JOIN).unwrap();
        assert_eq!((join.answers, join.no_answer), (2, 1));
        assert_eq!(join.errors["no answer"], 1);
        assert!((join.first_success_seconds.unwrap() - 1.5).abs() < 1e-9);
        assert!(restart.route(STATUS).is_none(), "no status read after it");
        // Answered in the window, sent before it: no request of the route sent after the fault.
        let late = impacts(
            &[at.answer(STATUS, 9.0, 11.0, Some(503), None)],
            &[at.s(10.0)],
            at.s(30.0),
        );
        assert_eq!(late[0].route(STATUS).unwrap().first_success(), "not sent");
    }

    #[test]
    fn a_slow_success_sent_in_the_window_still_says_when_the_route_came_back() {
        let at = At(Instant::now());
        let answers = vec![at.answer(JOIN, 19.0, 22.0, Some(201), None)];
        let found = impacts(&answers, &[at.s(10.0), at.s(20.0)], at.s(30.0));
        let first = found[0].route(JOIN).unwrap();
        assert_eq!(first.answers, 0, "answered in the next window");
        assert!((first.first_success_seconds.unwrap() - 12.0).abs() < 1e-9);
        assert_eq!(found[1].route(JOIN).unwrap().answers, 1);
    }

    #[test]
    fn seconds_are_shown_signed_or_as_none() {
        assert_eq!(seconds_or_none(Some(1.234)), "+1.2 s");
        assert_eq!(seconds_or_none(None), "none");
    }
}
