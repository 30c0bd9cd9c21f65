//! The HTTP API's routes, as `template.yaml` declares them, and which function serves each. The
//! dev server registers exactly these; a test checks them against the template.

use http::Method;

/// The Lambda function behind a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    Join,
    Poll,
    Hold,
    /// A payment for a hold, or giving it back (the payment cancelled first).
    Checkout,
    Confirm,
    /// The public, cacheable routes (status, published draw, seat availability and layout).
    Status,
}

pub struct Route {
    pub method: Method,
    /// With API Gateway's `{parameter}` placeholders, which axum's router also understands.
    pub path: &'static str,
    pub function: Function,
    /// Whether the JWT authorizer guards it (every customer route; not the signed webhook nor
    /// the public routes).
    pub authorized: bool,
}

impl Route {
    /// Whether CloudFront caches it (by the origin's `Cache-Control`): the public routes.
    pub fn cached(&self) -> bool {
        self.function == Function::Status
    }

    /// Whether its `eventId` may also be a priority group's line, `<event>.<group>`
    /// (`EventId::parse_line`): the status and the draw, which each line has of its own.
    pub fn serves_lines(&self) -> bool {
        self.method == axum::http::Method::GET
            && matches!(
                self.path,
                "/events/{eventId}/status"
                    | "/events/{eventId}/draw"
                    | "/events/{eventId}/draw/{prefix}"
            )
    }
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
        route(
            Method::POST,
            "/events/{eventId}/holds",
            Function::Hold,
            true,
        ),
        route(
            Method::DELETE,
            "/events/{eventId}/holds/{orderId}",
            Function::Checkout,
            true,
        ),
        route(Method::GET, "/orders/{orderId}", Function::Hold, true),
        route(
            Method::POST,
            "/orders/{orderId}/payment",
            Function::Checkout,
            true,
        ),
        route(
            Method::POST,
            "/orders/{orderId}/confirm",
            Function::Confirm,
            false,
        ),
        route(Method::POST, "/webhooks/stripe", Function::Confirm, false),
        route(
            Method::GET,
            "/events/{eventId}/status",
            Function::Status,
            false,
        ),
        route(
            Method::GET,
            "/events/{eventId}/draw",
            Function::Status,
            false,
        ),
        route(
            Method::GET,
            "/events/{eventId}/draw/{prefix}",
            Function::Status,
            false,
        ),
        route(
            Method::GET,
            "/events/{eventId}/seats",
            Function::Status,
            false,
        ),
        route(
            Method::GET,
            "/events/{eventId}/layout",
            Function::Status,
            false,
        ),
        route(
            Method::GET,
            "/events/{eventId}/layout/{version}",
            Function::Status,
            false,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

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

    /// The dev server stands in for exactly the HTTP functions of `lineup::wiring::functions`.
    #[test]
    fn the_dev_server_runs_every_http_function() {
        use lineup::wiring::functions::{Trigger, FUNCTIONS};
        let served: BTreeSet<String> = routes()
            .iter()
            .map(|route| format!("{:?}", route.function).to_lowercase())
            .collect();
        let http: BTreeSet<String> = FUNCTIONS
            .iter()
            .filter(|function| function.trigger == Trigger::Http)
            .map(|function| function.name.to_owned())
            .collect();
        assert_eq!(served, http);
    }

    #[test]
    fn the_dev_server_serves_exactly_the_templates_routes() {
        let served: BTreeSet<String> = routes().iter().map(Route::key).collect();
        assert_eq!(served, template_routes());
        assert_eq!(served.len(), 15);
    }

    /// Every operation under `paths:` in `openapi.yaml`, as `METHOD /path`, with whether it
    /// needs the caller's JWT (`false` for an operation with `security: []`). There is no YAML
    /// parser among the CLI's dependencies, so this reads the file's block layout: a path is a
    /// key indented 2 spaces under `paths:`, an operation an HTTP method key indented 4 under it,
    /// and its `security` a key indented 6. (Block scalars are indented deeper than their key,
    /// so a description's text never reads as a key at those depths.)
    fn openapi_operations() -> BTreeMap<String, bool> {
        const METHODS: [&str; 8] = [
            "get", "put", "post", "delete", "options", "head", "patch", "trace",
        ];
        let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi.yaml"))
            .expect("openapi.yaml is beside the workspace");
        let mut operations = BTreeMap::new();
        let (mut in_paths, mut path, mut operation) = (false, None::<String>, None::<String>);
        for line in spec.lines() {
            let text = line.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            if indent == 0 {
                in_paths = text == "paths:";
                (path, operation) = (None, None);
                continue;
            }
            if !in_paths {
                continue;
            }
            match indent {
                2 => {
                    let key = text.strip_suffix(':').map(|k| k.trim_matches(['\'', '"']));
                    path = key.filter(|key| key.starts_with('/')).map(str::to_owned);
                    assert!(
                        path.is_some(),
                        "openapi.yaml: not a path under `paths:`: {line}"
                    );
                    operation = None;
                }
                4 => {
                    operation = text
                        .strip_suffix(':')
                        .filter(|key| METHODS.contains(key))
                        .zip(path.as_deref())
                        .map(|(method, path)| format!("{} {path}", method.to_uppercase()));
                    if let Some(operation) = &operation {
                        let fresh = operations.insert(operation.clone(), true).is_none();
                        assert!(fresh, "openapi.yaml: {operation} twice");
                    }
                }
                6 if text == "security: []" => {
                    if let Some(operation) = &operation {
                        operations.insert(operation.clone(), false);
                    }
                }
                _ => {}
            }
        }
        operations
    }

    /// `openapi.yaml` is the public contract: it documents exactly the API's routes (not
    /// `lineup dev`'s own `/dev/...` routes, which are not part of it), and the webhook as the
    /// one route without a JWT.
    #[test]
    fn openapi_documents_exactly_the_routes() {
        let served: BTreeMap<String, bool> = routes()
            .iter()
            .map(|route| (route.key(), route.authorized))
            .collect();
        let documented = openapi_operations();
        let keys = |map: &BTreeMap<String, bool>| map.keys().cloned().collect::<BTreeSet<_>>();
        assert_eq!(
            keys(&documented),
            keys(&served),
            "openapi.yaml's paths and methods against the routes"
        );
        assert_eq!(
            documented, served,
            "openapi.yaml's `security: []` against the routes' authorizer"
        );
    }

    #[test]
    fn only_the_webhook_and_the_public_routes_are_unauthorized() {
        let open: Vec<_> = routes()
            .into_iter()
            .filter(|r| !r.authorized)
            .map(|r| r.key())
            .collect();
        assert_eq!(
            open,
            [
                "POST /orders/{orderId}/confirm",
                "POST /webhooks/stripe",
                "GET /events/{eventId}/status",
                "GET /events/{eventId}/draw",
                "GET /events/{eventId}/draw/{prefix}",
                "GET /events/{eventId}/seats",
                "GET /events/{eventId}/layout",
                "GET /events/{eventId}/layout/{version}"
            ]
        );
        assert!(routes()
            .iter()
            .filter(|r| r.cached())
            .all(|r| !r.authorized && r.method == Method::GET));
        let template =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .unwrap();
        assert!(template.contains("Authorizer: NONE"));
    }
}
