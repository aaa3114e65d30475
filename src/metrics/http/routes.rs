//! What each request is answered with: `/metrics`, `/healthz`, and the live pages when there
//! are any; GET and HEAD only. Answers are made on the blocking pool, [`MAKING_AT_ONCE`] at a
//! time, and gzip-compressed there when the client asks for it.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::Semaphore;

use super::{gzip, Content, NoReport};

/// Answers made at once: the machine's cores are the relay's first.
const MAKING_AT_ONCE: usize = 2;

const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";

pub(super) type Answer = Response<Full<Bytes>>;

/// The endpoint's service: one clone per connection, counting that connection's requests.
#[derive(Clone)]
pub(super) struct Routes {
    content: Content,
    timeout: Duration,
    making: Arc<Semaphore>,
    requests: Arc<AtomicU64>,
}

impl Routes {
    pub(super) fn new(content: Content, timeout: Duration) -> Self {
        Routes {
            content,
            timeout,
            making: Arc::new(Semaphore::new(MAKING_AT_ONCE)),
            requests: Arc::default(),
        }
    }

    /// The same content for a new connection, with its own count.
    pub(super) fn for_connection(&self) -> Self {
        Routes {
            requests: Arc::default(),
            ..self.clone()
        }
    }

    /// Requests this connection has had.
    pub(super) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

impl hyper::service::Service<Request<Incoming>> for Routes {
    type Response = Answer;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let nth = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let routes = self.clone();
        Box::pin(async move {
            let answer = routes.answer(&request).await;
            let gzipped = answer.headers().contains_key(header::CONTENT_ENCODING);
            tracing::trace!(
                "metrics endpoint: {} {} answered {}{}, request {nth} of its connection",
                request.method(),
                request.uri().path(),
                answer.status().as_u16(),
                if gzipped { " gzipped" } else { "" },
            );
            Ok(answer)
        })
    }
}

/// What a route answers with, made off the runtime's workers.
enum Made {
    /// A content type, a body, and the entity tag of a live page.
    Body(&'static str, String, Option<String>),
    /// No JSON report, and why.
    Missing(NoReport),
}

/// A made answer, its body compressed when asked for.
enum Ready {
    Body {
        content_type: &'static str,
        body: Bytes,
        gzipped: bool,
        etag: Option<String>,
    },
    Missing(NoReport),
}

impl Routes {
    async fn answer(&self, request: &Request<Incoming>) -> Answer {
        let head_only = request.method() == Method::HEAD;
        if request.method() != Method::GET && !head_only {
            let mut answer = plain(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
            answer
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            // A body may follow what is refused: the connection closes after a moment of
            // reading it (connection.rs), so the client reads this answer.
            return closing(answer);
        }
        let mut answer = self.route(request).await;
        // Every HTTP/1.1 client sends Host; without one (a probe, a hand-typed request) the
        // answer closes the connection instead of leaving it waiting for a next request.
        if !request.headers().contains_key(header::HOST) {
            answer = closing(answer);
        }
        answer
    }

    async fn route(&self, request: &Request<Incoming>) -> Answer {
        let gzip = gzip::accepted(
            request
                .headers()
                .get_all(header::ACCEPT_ENCODING)
                .iter()
                .map(HeaderValue::as_bytes),
        );
        let pages = self.content.pages.clone();
        let path = request.uri().path();
        if let ("/" | "/report.json", Some(pages)) = (path, &pages) {
            let tag = pages.etag();
            let known = request.headers().get(header::IF_NONE_MATCH);
            if known.is_some_and(|k| k.as_bytes() == tag.as_bytes()) {
                return with_etag(empty(StatusCode::NOT_MODIFIED), &tag);
            }
        }
        let make: Box<dyn FnOnce() -> Made + Send> = match (path, pages) {
            ("/metrics", _) => {
                let metrics = Arc::clone(&self.content.metrics);
                Box::new(move || Made::Body(PROMETHEUS_TEXT, metrics.render(), None))
            }
            ("/healthz", _) => return plain(StatusCode::OK, "ok\n"),
            ("/", Some(pages)) => Box::new(move || {
                let page = pages.html();
                Made::Body(HTML, page.body, Some(page.etag))
            }),
            ("/report.json", Some(pages)) => Box::new(move || match pages.json() {
                Ok(page) => Made::Body(JSON, page.body, Some(page.etag)),
                Err(missing) => Made::Missing(missing),
            }),
            (_, pages) => {
                let served = if pages.is_some() {
                    "psprobe serves /metrics, /healthz, / (the live page) and /report.json\n"
                } else {
                    "psprobe serves /metrics and /healthz\n"
                };
                return plain(StatusCode::NOT_FOUND, served);
            }
        };
        match self.make(make, gzip).await {
            Some(Ready::Body {
                content_type,
                body,
                gzipped,
                etag,
            }) => {
                let mut answer = Response::new(Full::new(body));
                let headers = answer.headers_mut();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
                headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
                if gzipped {
                    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                }
                match etag {
                    Some(tag) => with_etag(answer, &tag),
                    None => answer,
                }
            }
            Some(Ready::Missing(missing)) => {
                let (status, why) = match missing {
                    NoReport::Yet(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
                    NoReport::Here(why) => (StatusCode::NOT_FOUND, why),
                };
                let body = serde_json::json!({ "error": why }).to_string();
                let mut answer = Response::new(Full::new(Bytes::from(body)));
                *answer.status_mut() = status;
                answer
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
                answer
            }
            None => {
                tracing::debug!(
                    "metrics endpoint: no answer for {path} within {:?}",
                    self.timeout
                );
                plain(StatusCode::SERVICE_UNAVAILABLE, "busy\n")
            }
        }
    }

    /// Runs `make` on the blocking pool (compressing its body when `gzip`), waiting for a
    /// turn; `None` when that takes longer than the timeout.
    async fn make(&self, make: Box<dyn FnOnce() -> Made + Send>, gzip: bool) -> Option<Ready> {
        let making = Arc::clone(&self.making);
        let work = async move {
            let _turn = making.acquire_owned().await.ok()?;
            tokio::task::spawn_blocking(move || {
                let (content_type, text, etag) = match make() {
                    Made::Body(content_type, text, etag) => (content_type, text, etag),
                    Made::Missing(missing) => return Ready::Missing(missing),
                };
                let gzipped = gzip && text.len() >= gzip::MIN_LENGTH;
                let body = if gzipped {
                    let packed = gzip::compress(text.as_bytes());
                    tracing::trace!(
                        "metrics endpoint: {} bytes gzipped to {}",
                        text.len(),
                        packed.len()
                    );
                    Bytes::from(packed)
                } else {
                    Bytes::from(text.into_bytes())
                };
                Ready::Body {
                    content_type,
                    body,
                    gzipped,
                    etag,
                }
            })
            .await
            .ok()
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .ok()
            .flatten()
    }
}

fn plain(status: StatusCode, text: &'static str) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *answer.status_mut() = status;
    answer
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT));
    answer
}

fn empty(status: StatusCode) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::new()));
    *answer.status_mut() = status;
    answer
}

fn with_etag(mut answer: Answer, tag: &str) -> Answer {
    if let Ok(value) = HeaderValue::from_str(tag) {
        answer.headers_mut().insert(header::ETAG, value);
    }
    answer
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    answer
}

/// `answer`, after which hyper closes the connection.
fn closing(mut answer: Answer) -> Answer {
    answer
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}
