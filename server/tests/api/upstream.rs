//! A scripted upstream HTTP server on 127.0.0.1 (an LLM provider or a Hermes gateway): each
//! request to `METHOD /path` takes the next reply scripted for it, and every request is
//! recorded. Streamed replies are written piece by piece, so tests can split UTF-8, pause until
//! another request arrives, drop the connection or hang until the client goes away.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::Notify;

/// One piece of a streamed reply.
#[derive(Clone, Debug)]
pub enum Piece {
    /// Raw bytes, written as one HTTP chunk.
    Bytes(Vec<u8>),
    /// Waits until a request to this `METHOD /path` has been recorded.
    WaitFor(String),
    /// Breaks the connection (the body ends with an error).
    Abort,
    /// Writes nothing more until the client disconnects.
    Hang,
    /// The same bytes written this many times, each as a chunk of its own (made as they go:
    /// a 100 MB reply costs the test nothing).
    Repeat(Vec<u8>, usize),
}

/// A scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A JSON body with a status.
    Json(u16, Value),
    /// An event stream.
    Stream(Vec<Piece>),
}

/// One recorded request.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub key: String,
    pub auth: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    replies: Mutex<HashMap<String, VecDeque<Reply>>>,
    requests: Mutex<Vec<Recorded>>,
    arrived: Notify,
    disconnected: AtomicBool,
}

/// The server.
#[derive(Clone)]
pub struct Upstream {
    pub addr: SocketAddr,
    inner: Arc<Inner>,
}

impl Upstream {
    pub async fn start() -> Upstream {
        let inner = Arc::new(Inner::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&inner));
        // Lives as long as the test's runtime.
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Upstream { addr, inner }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Queues `reply` for the next request to `key` (`"POST /v1/chat/completions"`).
    pub fn script(&self, key: &str, reply: Reply) {
        self.inner
            .replies
            .lock()
            .unwrap()
            .entry(key.to_owned())
            .or_default()
            .push_back(reply);
    }

    /// The requests recorded so far for `key`.
    pub fn requests(&self, key: &str) -> Vec<Recorded> {
        self.inner
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.key == key)
            .cloned()
            .collect()
    }

    /// Waits until a streamed reply saw its client go away.
    pub async fn wait_disconnected(&self) {
        for _ in 0..200 {
            if self.inner.disconnected.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the client never closed the upstream connection");
    }

    /// Waits until a request to `key` arrived.
    pub async fn wait_request(&self, key: &str) -> Recorded {
        for _ in 0..400 {
            if let Some(r) = self.requests(key).pop() {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no request to {key}");
    }
}

async fn handle(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let key = format!("{} {}", request.method(), request.uri().path());
    let auth = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = axum::body::to_bytes(request.into_body(), 16 << 20)
        .await
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    inner.requests.lock().unwrap().push(Recorded {
        key: key.clone(),
        auth,
        body,
    });
    inner.arrived.notify_waiters();
    let reply = inner
        .replies
        .lock()
        .unwrap()
        .get_mut(&key)
        .and_then(VecDeque::pop_front);
    match reply {
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": {"message": format!("nothing scripted for {key}")}})),
        )
            .into_response(),
        Some(Reply::Json(status, value)) => {
            (StatusCode::from_u16(status).unwrap(), axum::Json(value)).into_response()
        }
        Some(Reply::Stream(pieces)) => {
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
            let inner = Arc::clone(&inner);
            tokio::spawn(async move {
                for piece in pieces {
                    match piece {
                        Piece::Bytes(b) => {
                            if tx.send(Ok(Bytes::from(b))).await.is_err() {
                                inner.disconnected.store(true, Ordering::SeqCst);
                                return;
                            }
                            // Each piece its own read on the other side.
                            tokio::time::sleep(Duration::from_millis(2)).await;
                        }
                        Piece::WaitFor(key) => loop {
                            let arrived = inner.arrived.notified();
                            if inner.requests.lock().unwrap().iter().any(|r| r.key == key) {
                                break;
                            }
                            tokio::select! {
                                () = arrived => {}
                                () = tx.closed() => {
                                    inner.disconnected.store(true, Ordering::SeqCst);
                                    return;
                                }
                            }
                        },
                        Piece::Abort => {
                            let _ = tx
                                .send(Err(std::io::Error::other("scripted connection drop")))
                                .await;
                            return;
                        }
                        Piece::Repeat(bytes, times) => {
                            let bytes = Bytes::from(bytes);
                            for _ in 0..times {
                                if tx.send(Ok(bytes.clone())).await.is_err() {
                                    inner.disconnected.store(true, Ordering::SeqCst);
                                    return;
                                }
                            }
                        }
                        Piece::Hang => {
                            tx.closed().await;
                            inner.disconnected.store(true, Ordering::SeqCst);
                            return;
                        }
                    }
                }
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(
                    tokio_stream::wrappers::ReceiverStream::new(rx),
                ))
                .unwrap()
        }
    }
}

/// `data: JSON\n\n`.
pub fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

/// Text cut into pieces of `size` bytes, regardless of character boundaries.
pub fn split_bytes(text: &str, size: usize) -> Vec<Piece> {
    text.as_bytes()
        .chunks(size)
        .map(|c| Piece::Bytes(c.to_vec()))
        .collect()
}

/// An OpenAI `chat.completion.chunk` with one choice.
pub fn delta(delta: Value, finish: Option<&str>) -> String {
    data(json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }))
}

/// The usage chunk OpenAI sends last with `include_usage`.
pub fn usage(prompt: u64, completion: u64) -> String {
    data(json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }))
}

pub const DONE: &str = "data: [DONE]\n\n";
