//! What `template.yaml` deploys by default that a plan must fit in: each function's memory and
//! reserved concurrency, and each route's throttle. A plan that needs more says which parameter
//! to raise. A test holds these to the template, so the plan cannot drift from the stack.

use serde::Serialize;

/// The stack's Lambda functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Function {
    Join,
    Poll,
    Hold,
    /// A payment for a hold, or its release (outside the VPC: it calls the provider).
    Checkout,
    Confirm,
    Admit,
    Expire,
    OutboxStream,
    Status,
    /// The seats table's stream to the seat map's bits in Redis (docs/decisions/0017).
    Availability,
    /// The refund queue: each `refund_required` carried out at the payment provider.
    Refund,
    /// Every minute: open payments looked at again through the provider.
    Reconcile,
}

impl Function {
    pub const ALL: [Function; 12] = [
        Function::Join,
        Function::Poll,
        Function::Hold,
        Function::Checkout,
        Function::Confirm,
        Function::Admit,
        Function::Expire,
        Function::OutboxStream,
        Function::Status,
        Function::Availability,
        Function::Refund,
        Function::Reconcile,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Function::Join => "join",
            Function::Poll => "poll",
            Function::Hold => "hold",
            Function::Checkout => "checkout",
            Function::Confirm => "confirm",
            Function::Admit => "admit",
            Function::Expire => "expire",
            Function::OutboxStream => "outbox-stream",
            Function::Status => "status",
            Function::Availability => "availability",
            Function::Refund => "refund",
            Function::Reconcile => "reconcile",
        }
    }

    /// The template parameter holding its reserved concurrency.
    pub fn concurrency_parameter(self) -> &'static str {
        match self {
            Function::Join => "JoinConcurrency",
            Function::Poll => "PollConcurrency",
            Function::Hold => "HoldConcurrency",
            Function::Checkout => "CheckoutConcurrency",
            Function::Confirm => "ConfirmConcurrency",
            Function::Admit => "AdmitConcurrency",
            Function::Expire => "ExpireConcurrency",
            Function::OutboxStream => "OutboxStreamConcurrency",
            Function::Status => "StatusConcurrency",
            Function::Availability => "AvailabilityConcurrency",
            Function::Refund => "RefundConcurrency",
            Function::Reconcile => "ReconcileConcurrency",
        }
    }

    /// Its reserved concurrency by default.
    pub fn reserved_concurrency(self) -> f64 {
        match self {
            Function::Join => 200.0,
            Function::Poll => 100.0,
            Function::Hold => 250.0,
            Function::Checkout => 64.0,
            Function::Confirm => 50.0,
            Function::Admit => 2.0,
            Function::Expire => 2.0,
            Function::OutboxStream => 10.0,
            Function::Status => 32.0,
            Function::Availability => 10.0,
            Function::Refund => 5.0,
            Function::Reconcile => 2.0,
        }
    }

    /// Secrets each instance reads (every HTTP function checks CloudFront's origin secret; join,
    /// poll and hold also read the signing key, confirm the webhook secrets; refund reads the
    /// Stripe key).
    pub fn secrets_read(self) -> f64 {
        match self {
            Function::Join | Function::Poll | Function::Hold | Function::Checkout => 2.0,
            Function::Confirm => 3.0,
            Function::Status | Function::Refund | Function::Reconcile => 1.0,
            Function::Admit
            | Function::Expire
            | Function::OutboxStream
            | Function::Availability => 0.0,
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// Its memory: the template's `Globals: Function: MemorySize`, but `admit`'s own (the
    /// pre-queue draw holds every entrant in memory).
    pub fn memory_mb(self) -> f64 {
        match self {
            Function::Admit => ADMIT_MEMORY_MB,
            _ => FUNCTION_MEMORY_MB,
        }
    }
}

/// Every function's memory but `admit`'s (the template's `Globals: Function: MemorySize`).
pub const FUNCTION_MEMORY_MB: f64 = 256.0;
/// `admit`'s memory (`AdmitFunction`'s `MemorySize`).
pub const ADMIT_MEMORY_MB: f64 = 1024.0;

/// The routes a waiting-room customer, an admitted shopper or the payment provider calls
/// (through CloudFront: docs/decisions/0015-cloudfront-and-waf-in-front.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Route {
    Join,
    Claim,
    Status,
    DrawChunk,
    /// The availability (public, cached a second, served by `status`).
    SeatMap,
    /// A version of the seat layout (public, immutable, served by `status`).
    Layout,
    Hold,
    OrderStatus,
    /// `POST /orders/{orderId}/payment`: the order's payment made at the provider (checkout).
    Checkout,
    Webhook,
}

/// A table's warm throughput for writes the template sets (its parameter and default), where
/// it sets one; other tables have a new table's 4,000.
pub fn warm_writes(table: crate::tools::plan::load::Table) -> Option<(&'static str, f64)> {
    use crate::tools::plan::load::Table;
    match table {
        Table::Seats => Some(("SeatsTableWarmWrites", 15_000.0)),
        Table::Orders => Some(("OrdersTableWarmWrites", 12_000.0)),
        Table::PendingIndex | Table::Outbox | Table::Events => None,
    }
}

impl Route {
    pub const ALL: [Route; 10] = [
        Route::Join,
        Route::Claim,
        Route::Status,
        Route::DrawChunk,
        Route::SeatMap,
        Route::Layout,
        Route::Hold,
        Route::OrderStatus,
        Route::Checkout,
        Route::Webhook,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Route::Join => "POST /events/{eventId}/queue",
            Route::Claim => "GET /events/{eventId}/queue/{queueId}",
            Route::Status => "GET /events/{eventId}/status",
            Route::DrawChunk => "GET /events/{eventId}/draw/{prefix}",
            Route::SeatMap => "GET /events/{eventId}/seats",
            Route::Layout => "GET /events/{eventId}/layout/{version}",
            Route::Hold => "POST /events/{eventId}/holds",
            Route::OrderStatus => "GET /orders/{orderId}",
            Route::Checkout => "POST /orders/{orderId}/payment",
            Route::Webhook => "POST /orders/{orderId}/confirm",
        }
    }

    /// The template parameter for its throttle and the throttle's default, requests per second
    /// (`None` for a route the template would not throttle).
    pub fn throttle(self) -> Option<(&'static str, f64)> {
        match self {
            Route::Join => Some(("JoinRouteRateLimit", 4_200.0)),
            Route::Claim => Some(("PollRouteRateLimit", 2_000.0)),
            Route::Hold | Route::OrderStatus | Route::Checkout => {
                Some(("HoldRouteRateLimit", 1_400.0))
            }
            Route::Webhook => Some(("WebhookRouteRateLimit", 2_000.0)),
            Route::DrawChunk => Some(("DrawChunkRouteRateLimit", 400.0)),
            Route::Status | Route::SeatMap | Route::Layout => Some(("StatusRouteRateLimit", 100.0)),
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan models every function there is (`lineup::wiring::functions`), by its name.
    #[test]
    fn the_plan_knows_exactly_the_functions_there_are() {
        let modelled: Vec<&str> = Function::ALL.iter().map(|f| f.name()).collect();
        let mut modelled_sorted = modelled.clone();
        modelled_sorted.sort_unstable();
        let mut existing: Vec<&str> = lineup::wiring::functions::FUNCTIONS
            .iter()
            .map(|f| f.name)
            .collect();
        existing.sort_unstable();
        assert_eq!(modelled_sorted, existing);
    }

    fn template() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
            .expect("template.yaml is beside the workspace")
    }

    /// The `Default:` under `  <parameter>:` in the template's Parameters.
    fn parameter_default(template: &str, parameter: &str) -> f64 {
        let header = format!("\n  {parameter}:\n");
        let start = template
            .find(&header)
            .unwrap_or_else(|| panic!("{parameter} is not a template parameter"));
        let rest = &template[start + header.len()..];
        let line = rest
            .lines()
            .take_while(|line| line.starts_with("    "))
            .find_map(|line| line.trim().strip_prefix("Default:"))
            .unwrap_or_else(|| panic!("{parameter} has no default"));
        line.trim().parse().unwrap()
    }

    #[test]
    fn reserved_concurrency_and_route_throttles_are_the_templates_defaults() {
        let template = template();
        for function in Function::ALL {
            assert_eq!(
                parameter_default(&template, function.concurrency_parameter()),
                function.reserved_concurrency(),
                "{}",
                function.name()
            );
        }
        for route in Route::ALL {
            if let Some((parameter, rate)) = route.throttle() {
                assert_eq!(parameter_default(&template, parameter), rate, "{parameter}");
                // The route's RouteSettings entry, and the parameter its rate refers to.
                let entry = format!("\"{}\":\n", route.key());
                let settings = template
                    .split(&entry)
                    .nth(1)
                    .unwrap_or_else(|| panic!("{} has no RouteSettings entry", route.key()));
                let rate_line = settings.lines().next().unwrap_or_default().trim();
                assert_eq!(
                    rate_line,
                    format!("ThrottlingRateLimit: !Ref {parameter}"),
                    "{}",
                    route.key()
                );
            }
        }
    }

    #[test]
    fn the_plans_edge_budget_is_the_templates_default_the_admitter_is_given() {
        let template = template();
        assert_eq!(
            parameter_default(&template, "EdgeOpeningRequestsPerSecond"),
            lineup::domain::wait_policy::EDGE_OPENING_REQUESTS_PER_SECOND as f64
        );
        let admit = template
            .split("\n  AdmitFunction:\n")
            .nth(1)
            .unwrap()
            .split("\n\n")
            .next()
            .unwrap();
        assert!(
            admit.contains("EDGE_OPENING_REQUESTS_PER_SECOND: !Ref EdgeOpeningRequestsPerSecond"),
            "{admit}"
        );
    }

    #[test]
    fn warm_throughput_is_the_templates_default_on_its_table() {
        use crate::tools::plan::load::Table;
        let template = template();
        for (table, resource) in [(Table::Seats, "SeatsTable"), (Table::Orders, "OrdersTable")] {
            let (parameter, writes) = warm_writes(table).unwrap();
            assert_eq!(
                parameter_default(&template, parameter),
                writes,
                "{parameter}"
            );
            let properties = template
                .split(&format!("\n  {resource}:\n"))
                .nth(1)
                .unwrap()
                .split("\n\n")
                .next()
                .unwrap();
            assert!(
                properties.contains(&format!("WriteUnitsPerSecond: !Ref {parameter} }}")),
                "{resource}"
            );
        }
    }

    #[test]
    fn every_function_the_template_reserves_concurrency_for_is_modelled() {
        let template = template();
        let mut reserved: Vec<&str> = template
            .lines()
            .filter_map(|line| {
                line.trim()
                    .strip_prefix("ReservedConcurrentExecutions: !Ref ")
            })
            .collect();
        let mut modelled: Vec<&str> = Function::ALL
            .iter()
            .map(|function| function.concurrency_parameter())
            .collect();
        reserved.sort_unstable();
        modelled.sort_unstable();
        assert_eq!(reserved, modelled);
    }

    #[test]
    fn every_function_has_the_global_memory_size_but_admit() {
        let template = template();
        let sizes: Vec<&str> = template
            .lines()
            .filter_map(|line| line.trim().strip_prefix("MemorySize:"))
            .map(str::trim)
            .collect();
        assert_eq!(
            sizes,
            [FUNCTION_MEMORY_MB.to_string(), ADMIT_MEMORY_MB.to_string()],
            "the global size, then AdmitFunction's own"
        );
        let admit = template.split("  AdmitFunction:").nth(1).unwrap();
        let admit = admit.split("\n  HoldFunction:").next().unwrap();
        assert!(admit.contains(&format!("MemorySize: {ADMIT_MEMORY_MB}")));
    }
}
