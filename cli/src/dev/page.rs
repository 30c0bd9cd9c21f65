//! The waiting-room page (`web/`), compiled into the binary so that `lineup dev` serves it
//! wherever the binary is and wherever it is started from. Its HTML, its CSS and its JavaScript
//! (the entry module `app.js` and the native ES modules it imports by relative URL, no build
//! step), each file named here with its content type: plainer than an embedding crate, and a
//! test keeps this list and `web/` equal, so a file added there cannot be silently left out.
//! (`lineup dev --web-dir web` serves the files from disk instead, for editing the page without
//! rebuilding.)

use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// One file of the page.
#[derive(Debug)]
pub struct Asset {
    /// The request path.
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

/// Every file of `web/`, as built.
pub const ASSETS: &[Asset] = &[
    Asset {
        path: "/index.html",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../../../web/index.html"),
    },
    // The entry module index.html loads; the modules below are its imports.
    Asset {
        path: "/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/app.js"),
    },
    Asset {
        path: "/api.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/api.js"),
    },
    Asset {
        path: "/config.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/config.js"),
    },
    Asset {
        path: "/customer.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/customer.js"),
    },
    Asset {
        path: "/dom.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/dom.js"),
    },
    Asset {
        path: "/format.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/format.js"),
    },
    Asset {
        path: "/holds.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/holds.js"),
    },
    Asset {
        path: "/notice.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/notice.js"),
    },
    Asset {
        path: "/order.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/order.js"),
    },
    Asset {
        path: "/overview.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/overview.js"),
    },
    Asset {
        path: "/phase.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/phase.js"),
    },
    Asset {
        path: "/queue.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/queue.js"),
    },
    Asset {
        path: "/seats.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/seats.js"),
    },
    Asset {
        path: "/section.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/section.js"),
    },
    Asset {
        path: "/state.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/state.js"),
    },
    Asset {
        path: "/status.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/status.js"),
    },
    Asset {
        path: "/storage.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/storage.js"),
    },
    Asset {
        path: "/ticket.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/ticket.js"),
    },
    Asset {
        path: "/timers.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/timers.js"),
    },
    // The join's proof-of-work: asking the worker, the worker, and the solver it runs.
    Asset {
        path: "/challenge.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/challenge.js"),
    },
    Asset {
        path: "/pow-worker.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/pow-worker.js"),
    },
    Asset {
        path: "/pow.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/pow.js"),
    },
    // Priority groups: the line a customer waits in, and the one served.
    Asset {
        path: "/lines.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/lines.js"),
    },
    // Sections set aside for a presale group: closed to everyone else until its window ends.
    Asset {
        path: "/allocations.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/allocations.js"),
    },
    // The join's access code field.
    Asset {
        path: "/access_code.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/access_code.js"),
    },
    Asset {
        path: "/style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../../web/style.css"),
    },
];

/// The asset a path names (`/` is the page itself).
pub fn asset(path: &str) -> Option<&'static Asset> {
    let path = if path == "/" { "/index.html" } else { path };
    ASSETS.iter().find(|asset| asset.path == path)
}

/// Serves the page's files to GET and HEAD; anything else gets `not_found`'s answer, in the same
/// shape as the API's unknown routes.
pub async fn serve(method: Method, uri: Uri) -> Response {
    match asset(uri.path()) {
        Some(asset) if method == Method::GET || method == Method::HEAD => (
            StatusCode::OK,
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(asset.content_type),
                ),
                // A rebuilt binary may serve another page: browsers revalidate every load.
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            asset.body,
        )
            .into_response(),
        _ => super::route_not_found().await,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    #[test]
    fn every_file_of_web_is_embedded_as_it_is_on_disk() {
        let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
        let on_disk: BTreeSet<String> = std::fs::read_dir(&web)
            .unwrap()
            .map(|entry| format!("/{}", entry.unwrap().file_name().to_string_lossy()))
            .collect();
        let embedded: BTreeSet<String> = ASSETS.iter().map(|a| a.path.to_owned()).collect();
        assert_eq!(embedded, on_disk, "web/ and page::ASSETS differ");
        for asset in ASSETS {
            let file = std::fs::read(web.join(&asset.path[1..])).unwrap();
            assert_eq!(asset.body, file.as_slice(), "{}", asset.path);
        }
    }

    #[test]
    fn paths_map_to_their_files_and_types() {
        assert_eq!(asset("/").unwrap().path, "/index.html");
        assert!(asset("/app.js")
            .unwrap()
            .content_type
            .starts_with("text/javascript"));
        assert!(asset("/style.css")
            .unwrap()
            .content_type
            .starts_with("text/css"));
        // A browser runs a module script only if it comes as JavaScript: every one of them.
        for asset in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            assert_eq!(
                asset.content_type, "text/javascript; charset=utf-8",
                "{}",
                asset.path
            );
        }
        assert!(asset("/queue.js").is_some());
        assert!(asset("/index.html")
            .unwrap()
            .body
            .starts_with(b"<!doctype html>"));
        for missing in ["/nope.js", "/web/app.js", "//app.js", "/app.js/"] {
            assert!(asset(missing).is_none(), "{missing}");
        }
    }

    #[tokio::test]
    async fn only_get_and_head_are_served() {
        let uri: Uri = "/app.js".parse().unwrap();
        let ok = serve(Method::GET, uri.clone()).await;
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(
            ok.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            serve(Method::HEAD, uri.clone()).await.status(),
            StatusCode::OK
        );
        assert_eq!(
            serve(Method::POST, uri).await.status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            serve(Method::GET, "/missing.png".parse().unwrap())
                .await
                .status(),
            StatusCode::NOT_FOUND
        );
    }
}
