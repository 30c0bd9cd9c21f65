//! The Lambda functions, listed once for the Rust code. `template.yaml`, `functions/Makefile`,
//! the workspace's members and the scripts that build or run the functions are checked against
//! this list (`shared/tests/function_list.rs`), so adding a function starts here.

/// What starts a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Routes of the HTTP API (through CloudFront).
    Http,
    /// An EventBridge schedule.
    Schedule,
    /// A DynamoDB stream.
    Stream,
    /// An SQS queue.
    Queue,
}

/// One Lambda function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Function {
    /// The crate and binary name (`functions/<name>`), and the module of
    /// [`crate::application`] and [`crate::wiring::lambda`] named after it (`-` as `_`).
    pub name: &'static str,
    /// The resource's logical id in `template.yaml`.
    pub logical_id: &'static str,
    /// What starts it.
    pub trigger: Trigger,
}

/// Every function, in the order of the request path: joining, waiting, admission, holding,
/// paying, lapsing, then the streams, the refunds and the public reads.
pub const FUNCTIONS: [Function; 12] = [
    Function {
        name: "join",
        logical_id: "JoinFunction",
        trigger: Trigger::Http,
    },
    Function {
        name: "poll",
        logical_id: "PollFunction",
        trigger: Trigger::Http,
    },
    Function {
        name: "admit",
        logical_id: "AdmitFunction",
        trigger: Trigger::Schedule,
    },
    Function {
        name: "hold",
        logical_id: "HoldFunction",
        trigger: Trigger::Http,
    },
    Function {
        name: "checkout",
        logical_id: "CheckoutFunction",
        trigger: Trigger::Http,
    },
    Function {
        name: "confirm",
        logical_id: "ConfirmFunction",
        trigger: Trigger::Http,
    },
    Function {
        name: "expire",
        logical_id: "ExpireFunction",
        trigger: Trigger::Schedule,
    },
    Function {
        name: "outbox-stream",
        logical_id: "OutboxStreamFunction",
        trigger: Trigger::Stream,
    },
    Function {
        name: "reconcile",
        logical_id: "ReconcileFunction",
        trigger: Trigger::Schedule,
    },
    Function {
        name: "refund",
        logical_id: "RefundFunction",
        trigger: Trigger::Queue,
    },
    Function {
        name: "status",
        logical_id: "StatusFunction",
        trigger: Trigger::Http,
    },
    Function {
        name: "availability",
        logical_id: "AvailabilityFunction",
        trigger: Trigger::Stream,
    },
];
