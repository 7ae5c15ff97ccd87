//! The lean HTTP client of the benchmarks: async sessions on one connection
//! pool, each request read to the end of its stream and checked only for
//! carrying its own result, so that what is measured is the server.

use std::future::Future;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use super::{POST_HEADERS, session_headers, session_id};
use crate::jsonrpc;

/// Opens sessions of one server over one connection pool.
#[derive(Clone)]
pub struct LeanHttpClient {
    http: Client,
    url: String,
}

impl LeanHttpClient {
    /// A client of `url` that keeps up to `connections` idle connections.
    pub fn new(url: &str, connections: usize) -> Self {
        let http = Client::builder()
            .pool_max_idle_per_host(connections)
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
            let session = LeanHttpSession { http, url, session };
            session
                .post(&jsonrpc::notification("notifications/initialized", Value::Null))
                .await;
            session
        }
    }
}

/// One session of the lean client.
pub struct LeanHttpSession {
    http: Client,
    url: String,
    session: String,
}

impl LeanHttpSession {
    async fn post(&self, message: &Value) -> String {
        let mut post = self.http.post(&self.url);
        for (name, value) in POST_HEADERS.into_iter().chain(session_headers(&self.session)) {
            post = post.header(name, value);
        }
        let response = post.body(message.to_string()).send().await.expect("POST");
        assert!(response.status().is_success(), "{}", response.status());
        response.text().await.expect("read the answer")
    }

    /// One request, read to the end of its stream; checks that its result came.
    pub async fn request(&self, id: u64, method: &str, params: &Value) {
        let body = self.post(&jsonrpc::request(id, method, params.clone())).await;
        assert!(body.contains(&format!("\"id\":{id},\"result\"")), "no result in {body}");
    }

    /// DELETE: ends the session.
    pub async fn close(&self) {
        let mut delete = self.http.delete(&self.url);
        for (name, value) in session_headers(&self.session) {
            delete = delete.header(name, value);
        }
        let response = delete.send().await.expect("DELETE");
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    }
}
