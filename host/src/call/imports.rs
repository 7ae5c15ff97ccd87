//! The host imports a plugin calls while serving a request (`wasm-mcp:plugin/host`):
//! logging, progress, cancellation, and the requests to the client (sampling,
//! elicitation, roots), all acting on the call's [`CallScope`].

use serde_json::{Value, json};

use super::scope::{ChangedLists, ClientRequestError, Question};
use super::state::CallState;
use crate::contract::bindings::host::{
    self, Answer, ClientError, ElicitResult, Elicitation, ListKind, LogLevel as WitLogLevel, Question as WitQuestion,
    Root, RpcError, SamplingRequest, SamplingResult,
};
use crate::contract::bindings::types;
use crate::contract::wire;
use crate::protocol::LogLevel;

fn log_level(level: WitLogLevel) -> LogLevel {
    match level {
        WitLogLevel::Debug => LogLevel::Debug,
        WitLogLevel::Info => LogLevel::Info,
        WitLogLevel::Notice => LogLevel::Notice,
        WitLogLevel::Warning => LogLevel::Warning,
        WitLogLevel::Error => LogLevel::Error,
        WitLogLevel::Critical => LogLevel::Critical,
        WitLogLevel::Alert => LogLevel::Alert,
        WitLogLevel::Emergency => LogLevel::Emergency,
    }
}

fn client_error(error: ClientRequestError) -> ClientError {
    match error {
        ClientRequestError::NotSupported(why) => ClientError::NotSupported(why),
        ClientRequestError::Rejected { code, message } => ClientError::Rejected(RpcError { code, message }),
        ClientRequestError::TimedOut => ClientError::TimedOut,
        ClientRequestError::Cancelled => ClientError::Cancelled,
    }
}

/// A client answer that does not parse is reported to the plugin as a rejection.
fn malformed_answer(what: &str, why: String) -> ClientError {
    ClientError::Rejected(RpcError {
        code: crate::protocol::jsonrpc::INVALID_PARAMS,
        message: format!("the client's {what} answer is malformed: {why}"),
    })
}

/// A plugin's question as a request to the client: its method and params.
fn question_request(question: WitQuestion) -> Result<(&'static str, Value), ClientError> {
    Ok(match question {
        WitQuestion::Sample(request) => (
            "sampling/createMessage",
            wire::sampling_request(request).map_err(ClientError::NotSupported)?,
        ),
        WitQuestion::Elicit(Elicitation::Form(form)) => (
            "elicitation/create",
            json!({
                "mode": "form",
                "message": form.message,
                "requestedSchema": wire::parse_json(&form.requested_schema, "requestedSchema")
                    .map_err(ClientError::NotSupported)?,
            }),
        ),
        WitQuestion::Elicit(Elicitation::Url(url)) => (
            "elicitation/create",
            json!({ "mode": "url", "message": url.message, "url": url.url, "elicitationId": url.elicitation_id }),
        ),
        WitQuestion::ListRoots => ("roots/list", json!({})),
    })
}

/// The client's answer to a request of `method`, as the plugin gets it.
fn parse_answer(method: &str, answer: &Value) -> Result<Answer, ClientError> {
    match method {
        "sampling/createMessage" => wire::parse_sampling_result(answer)
            .map(Answer::Sample)
            .map_err(|why| malformed_answer("sampling", why)),
        "elicitation/create" => wire::parse_elicit_result(answer)
            .map(Answer::Elicit)
            .map_err(|why| malformed_answer("elicitation", why)),
        _ => answer
            .get("roots")
            .and_then(Value::as_array)
            .map(|roots| {
                Answer::ListRoots(
                    roots
                        .iter()
                        .filter_map(|root| {
                            Some(Root {
                                uri: root.get("uri")?.as_str()?.to_owned(),
                                name: root.get("name").and_then(Value::as_str).map(str::to_owned),
                            })
                        })
                        .collect(),
                )
            })
            .ok_or_else(|| malformed_answer("roots", "no \"roots\" array".into())),
    }
}

impl CallState {
    /// Asks the client `questions` (each under its key, if it has one); the
    /// scope is cloned so the store state is not held across the wait.
    fn ask_questions(
        &self,
        questions: Vec<(Option<String>, WitQuestion)>,
    ) -> impl Future<Output = Vec<Result<Answer, ClientError>>> + Send + use<> {
        let scope = self.scope.clone();
        async move {
            let mut answers: Vec<Option<Result<Answer, ClientError>>> = Vec::with_capacity(questions.len());
            let mut asked = Vec::with_capacity(questions.len());
            for (key, question) in questions {
                match question_request(question) {
                    Ok((method, params)) => {
                        asked.push((answers.len(), Question { key, method, params }));
                        answers.push(None);
                    }
                    Err(refused) => answers.push(Some(Err(refused))),
                }
            }
            let (slots, questions): (Vec<usize>, Vec<Question>) = asked.into_iter().unzip();
            let methods: Vec<&'static str> = questions.iter().map(|question| question.method).collect();
            let replies = scope.ask_client(questions).await;
            for ((slot, method), reply) in slots.into_iter().zip(methods).zip(replies) {
                answers[slot] = Some(
                    reply
                        .map_err(client_error)
                        .and_then(|answer| parse_answer(method, &answer)),
                );
            }
            answers
                .into_iter()
                .map(|answer| answer.expect("every question answered"))
                .collect()
        }
    }

    /// Asks one question under a key the host names.
    fn ask_one(&self, question: WitQuestion) -> impl Future<Output = Result<Answer, ClientError>> + Send + use<> {
        let asking = self.ask_questions(vec![(None, question)]);
        async move { asking.await.pop().expect("one answer to one question") }
    }
}

impl types::Host for CallState {}

impl host::Host for CallState {
    /// Waits while the client is behind: the plugin's deadline and
    /// cancellation end the wait (see [`CallScope::log_text`]).
    async fn log(&mut self, level: WitLogLevel, message: String) -> wasmtime::Result<()> {
        self.scope.log_text(&self.plugin, log_level(level), message).await;
        Ok(())
    }

    async fn log_json(&mut self, level: WitLogLevel, data: String) -> wasmtime::Result<()> {
        self.scope.log_json(&self.plugin, log_level(level), data).await;
        Ok(())
    }

    async fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) -> wasmtime::Result<()> {
        self.scope.progress(progress, total, message);
        Ok(())
    }

    async fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.scope.is_cancelled())
    }

    async fn sample(&mut self, request: SamplingRequest) -> wasmtime::Result<Result<SamplingResult, ClientError>> {
        Ok(self
            .ask_one(WitQuestion::Sample(request))
            .await
            .map(|answer| match answer {
                Answer::Sample(result) => result,
                _ => unreachable!("a sampling question gets a sampling answer"),
            }))
    }

    async fn elicit(&mut self, request: Elicitation) -> wasmtime::Result<Result<ElicitResult, ClientError>> {
        Ok(self
            .ask_one(WitQuestion::Elicit(request))
            .await
            .map(|answer| match answer {
                Answer::Elicit(result) => result,
                _ => unreachable!("an elicitation gets an elicitation answer"),
            }))
    }

    async fn elicitation_complete(&mut self, elicitation_id: String) -> wasmtime::Result<()> {
        self.scope.notify(
            "notifications/elicitation/complete",
            json!({ "elicitationId": elicitation_id }),
        );
        Ok(())
    }

    async fn list_roots(&mut self) -> wasmtime::Result<Result<Vec<Root>, ClientError>> {
        Ok(self.ask_one(WitQuestion::ListRoots).await.map(|answer| match answer {
            Answer::ListRoots(roots) => roots,
            _ => unreachable!("a roots question gets a roots answer"),
        }))
    }

    async fn resource_updated(&mut self, uri: String) -> wasmtime::Result<()> {
        self.scope.resource_updated(&uri);
        Ok(())
    }

    async fn lists_changed(&mut self, lists: Vec<ListKind>) -> wasmtime::Result<()> {
        let mut changed = ChangedLists::default();
        for list in lists {
            match list {
                ListKind::Tools => changed.tools = true,
                ListKind::Resources => changed.resources = true,
                ListKind::Prompts => changed.prompts = true,
            }
        }
        self.scope.lists_changed(&self.plugin, changed);
        Ok(())
    }

    async fn run_as_task(&mut self) -> wasmtime::Result<bool> {
        Ok(self.scope.run_as_task())
    }

    async fn ask(
        &mut self,
        questions: Vec<(String, WitQuestion)>,
    ) -> wasmtime::Result<Vec<Result<Answer, ClientError>>> {
        Ok(self
            .ask_questions(
                questions
                    .into_iter()
                    .map(|(key, question)| (Some(key), question))
                    .collect(),
            )
            .await)
    }
}
