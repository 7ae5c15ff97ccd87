//! The lean HTTP client of the benchmarks: async sessions on one connection
//! pool (2025-11-25) or stateless requests (2026-07-28), each request read to
//! the end of its stream and checked only for carrying its own result, so
//! that what is measured is the server.

use std::future::Future;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use super::{POST_HEADERS, session_headers, session_id};
use crate::jsonrpc;
use crate::modern::{MODERN_VERSION, meta, with_meta};

/// Opens sessions of one server over one connection pool.
#[derive(Clone)]
pub struct LeanHttpClient {
    http: Client,
    url: String,
}

impl LeanHttpClient {
    /// A client of `url` that keeps up to `connections` idle connections.
    pub fn new(url: &str, connections: usize) -> Self {
        Self::with_bearer(url, connections, None)
    }

    /// [`new`](Self::new), sending `Authorization: Bearer TOKEN` with every request when given one.
    pub fn with_bearer(url: &str, connections: usize, token: Option<&str>) -> Self {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = token {
            let value = format!("Bearer {token}").parse().expect("a token fits a header");
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        crate::tls_provider();
        let http = Client::builder()
            .pool_max_idle_per_host(connections)
            .default_headers(headers)
            .build()
            .expect("an HTTP client");
        LeanHttpClient {
            http,
            url: url.to_string(),
        }
    }

    /// initialize + notifications/initialized: a session, to run on any task.
    pub fn open_session(&self) -> impl Future<Output = LeanHttpSession> + Send + 'static {
        let (http, url) = (self.http.clone(), self.url.clone());
        async move {
            let initialize = jsonrpc::request(0, "initialize", jsonrpc::initialize_params("bench", json!({})));
            let mut post = http.post(&url);
            for (name, value) in POST_HEADERS {
                post = post.header(name, value);
            }
            let response = post.body(initialize.to_string()).send().await.expect("initialize");
            let session = session_id(response.headers());
            response.bytes().await.expect("read the answer to initialize");
            let session = LeanHttpSession {
                http,
                url,
                session: Some(session),
            };
            session
                .post(&jsonrpc::notification("notifications/initialized", Value::Null))
                .await;
            session
        }
    }

    /// A 2026-07-28 client: no session; every request carries its `_meta`
    /// and the headers that mirror it.
    pub fn stateless(&self) -> LeanHttpSession {
        LeanHttpSession {
            http: self.http.clone(),
            url: self.url.clone(),
            session: None,
        }
    }
}

/// One session of the lean client, or a stateless client (no session).
pub struct LeanHttpSession {
    http: Client,
    url: String,
    session: Option<String>,
}

impl LeanHttpSession {
    async fn post(&self, message: &Value) -> String {
        let response = self.send(message, None).await;
        assert!(response.status().is_success(), "{}", response.status());
        response.text().await.expect("read the answer")
    }

    /// POSTs `message`, with `Authorization: Bearer TOKEN` when given one
    /// (over the client's own).
    async fn send(&self, message: &Value, bearer: Option<&str>) -> reqwest::Response {
        let mut post = self.http.post(&self.url);
        if let Some(token) = bearer {
            post = post.bearer_auth(token);
        }
        for (name, value) in POST_HEADERS {
            post = post.header(name, value);
        }
        match &self.session {
            Some(session) => {
                for (name, value) in session_headers(session) {
                    post = post.header(name, value);
                }
            }
            None => {
                post = post.header("mcp-protocol-version", MODERN_VERSION);
                if let Some(method) = message["method"].as_str() {
                    post = post.header("mcp-method", method);
                }
                let params = &message["params"];
                if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
                    post = post.header("mcp-name", name);
                }
            }
        }
        post.body(message.to_string()).send().await.expect("POST")
    }

    /// One 2026-07-28 request with `token` as its bearer token, read to the
    /// end; its HTTP status, whatever it is.
    pub async fn status_with(&self, token: &str, id: u64, method: &str, params: &Value) -> StatusCode {
        let params = with_meta(params.clone(), &meta(json!({}), None));
        let response = self.send(&jsonrpc::request(id, method, params), Some(token)).await;
        let status = response.status();
        response.bytes().await.expect("read the answer");
        status
    }

    /// One request, read to the end of its stream; checks that its result came.
    pub async fn request(&self, id: u64, method: &str, params: &Value) {
        let params = match self.session {
            Some(_) => params.clone(),
            None => with_meta(params.clone(), &meta(json!({}), None)),
        };
        let body = self.post(&jsonrpc::request(id, method, params)).await;
        assert!(body.contains(&format!("\"id\":{id},\"result\"")), "no result in {body}");
    }

    /// One 2026-07-28 request from a client with `capabilities`; its result
    /// (from a JSON answer or the stream's last message).
    pub async fn result(&self, id: u64, method: &str, params: &Value, capabilities: &Value) -> Value {
        let params = with_meta(params.clone(), &meta(capabilities.clone(), None));
        let body = self.post(&jsonrpc::request(id, method, params)).await;
        let answer = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .chain(std::iter::once(body.as_str()))
            .filter_map(|message| serde_json::from_str::<Value>(message.trim()).ok())
            .find(|message| message["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer to {id} in {body}"));
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("an error: {answer}"))
    }

    /// DELETE: ends the session.
    pub async fn close(&self) {
        let Some(session) = &self.session else {
            return;
        };
        let mut delete = self.http.delete(&self.url);
        for (name, value) in session_headers(session) {
            delete = delete.header(name, value);
        }
        let response = delete.send().await.expect("DELETE");
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    }
}
