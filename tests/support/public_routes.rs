//! The public routes (`GET /events/{eventId}/status|draw|draw/{prefix}`) served over HTTP on a
//! local port through the real status handler, as an outsider (`lineup verify-draw`, the page)
//! reads them: each HTTP request turned into the API Gateway event `lambda_http` parses.

use std::sync::Arc;

use lambda_http::Body;
use lineup::application::status;
use lineup::application::status::StatusApi;
use serde_json::Value;
// The CLI's tokio features (net, io-util) are the test binary's too.
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves `GET /events/{eventId}/status|draw|draw/{prefix}` on a free local port through
/// `status::handle`, one request per connection, until the test's runtime ends. Returns the base
/// URL.
pub async fn serve_public_routes(api: StatusApi) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a local port");
    let address = listener.local_addr().expect("a bound address");
    let api = Arc::new(api);
    tokio::spawn(async move {
        while let Ok((connection, _)) = listener.accept().await {
            let api = api.clone();
            tokio::spawn(async move { answer(&api, connection).await });
        }
    });
    format!("http://{address}")
}

async fn answer(api: &StatusApi, mut connection: TcpStream) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match connection.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => head.extend_from_slice(&buffer[..read]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let mut request_line = head.lines().next().unwrap_or_default().split(' ');
    let (method, path) = (
        request_line.next().unwrap_or_default(),
        request_line.next().unwrap_or_default(),
    );
    let (status, headers, body) = match api_gateway_event(method, path) {
        Some(event) => {
            let response = status::handle(api, crate::request(&event)).await;
            let headers: Vec<(String, String)> = response
                .headers()
                .iter()
                .map(|(name, value)| {
                    let value = value.to_str().expect("ASCII header values");
                    (name.to_string(), value.to_owned())
                })
                .collect();
            let body = match response.body() {
                Body::Text(text) => text.clone().into_bytes(),
                Body::Binary(bytes) => bytes.clone(),
                _ => Vec::new(),
            };
            (response.status().as_u16(), headers, body)
        }
        // API Gateway's own answer to a route it does not have.
        None => (404, Vec::new(), br#"{"message":"Not Found"}"#.to_vec()),
    };
    let mut reply = format!("HTTP/1.1 {status} -\r\n");
    for (name, value) in headers {
        reply.push_str(&format!("{name}: {value}\r\n"));
    }
    reply.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = reply.into_bytes();
    bytes.extend(body);
    let _ = connection.write_all(&bytes).await;
    let _ = connection.shutdown().await;
}

/// The payload v2 event API Gateway sends the status function for a public route (the sample
/// events of `events/`, as CloudFront forwards them: no caller, no viewer header).
fn api_gateway_event(method: &str, path: &str) -> Option<Value> {
    let segments: Vec<&str> = path.split('/').collect();
    let (sample, parameters) = match segments.as_slice() {
        ["", "events", event, "status"] => ("status.json", vec![("eventId", *event)]),
        ["", "events", event, "draw"] => ("draw.json", vec![("eventId", *event)]),
        ["", "events", event, "draw", prefix] => (
            "draw-chunk.json",
            vec![("eventId", *event), ("prefix", *prefix)],
        ),
        _ => return None,
    };
    (method == "GET").then(|| crate::route(&crate::sample(sample), &parameters, None))
}
