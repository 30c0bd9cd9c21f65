//! The HTTP API's routes, as `template.yaml` declares them, and which function serves each. The
//! dev server registers exactly these; a test checks them against the template.

use http::Method;

/// The Lambda function behind a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    Join,
    Poll,
    Hold,
    Confirm,
}

pub struct Route {
    pub method: Method,
    /// With API Gateway's `{parameter}` placeholders, which axum's router also understands.
    pub path: &'static str,
    pub function: Function,
    /// Whether the JWT authorizer guards it (every customer route; not the signed webhook).
    pub authorized: bool,
}

impl Route {
    /// API Gateway's `routeKey`: `POST /events/{eventId}/queue`.
    pub fn key(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

pub fn routes() -> Vec<Route> {
    let route = |method: Method, path, function, authorized| Route {
        method,
        path,
        function,
        authorized,
    };
    vec![
        route(
            Method::POST,
            "/events/{eventId}/queue",
            Function::Join,
            true,
        ),
        route(
            Method::GET,
            "/events/{eventId}/queue/{queueId}",
            Function::Poll,
            true,
        ),
        route(
            Method::DELETE,
            "/events/{eventId}/queue/{queueId}",
            Function::Poll,
            true,
        ),
        route(Method::GET, "/events/{eventId}/seats", Function::Hold, true),
        route(
            Method::POST,
            "/events/{eventId}/holds",
            Function::Hold,
            true,
        ),
        route(
            Method::DELETE,
            "/events/{eventId}/holds/{orderId}",
            Function::Hold,
            true,
        ),
        route(Method::GET, "/orders/{orderId}", Function::Hold, true),
        route(
            Method::POST,
            "/orders/{orderId}/confirm",
            Function::Confirm,
            false,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Every `Method:`/`Path:` pair of the template's HttpApi events.
    fn template_routes() -> BTreeSet<String> {
        let template =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .expect("template.yaml is beside the workspace");
        let mut found = BTreeSet::new();
        let mut method = None;
        for line in template.lines().map(str::trim) {
            if let Some(value) = line.strip_prefix("Method: ") {
                method = Some(value.to_owned());
            } else if let (Some(path), Some(m)) = (line.strip_prefix("Path: "), method.take()) {
                found.insert(format!("{m} {path}"));
            }
        }
        found
    }

    #[test]
    fn the_dev_server_serves_exactly_the_templates_routes() {
        let served: BTreeSet<String> = routes().iter().map(Route::key).collect();
        assert_eq!(served, template_routes());
        assert_eq!(served.len(), 8);
    }

    #[test]
    fn only_the_webhook_is_unauthorized() {
        let open: Vec<_> = routes()
            .into_iter()
            .filter(|r| !r.authorized)
            .map(|r| r.key())
            .collect();
        assert_eq!(open, ["POST /orders/{orderId}/confirm"]);
        let template =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .unwrap();
        assert!(template.contains("Authorizer: NONE"));
    }
}
