//! The soak test (`make soak`; not part of `make test`).
//!
//! For `SOAK_SECONDS` (default 600), many clients at once use real servers:
//! `SOAK_STDIO_SERVERS` stdio servers (default 2), each one client with
//! several workers, and one Streamable HTTP server with `SOAK_HTTP_CLIENTS`
//! sessions (default 6). They call tools, create tasks and cancel them,
//! cancel requests, subscribe and unsubscribe, and set off floods from a
//! plugin (log messages of 256 KiB, tens of thousands of progress
//! notifications and resource updates in one call), while a plugin in the
//! served directory is replaced, corrupted, deleted and restored.
//!
//! It checks that every request gets exactly one response (none or one when
//! it was cancelled), that every response carries its own request's id and
//! payload (ids and payloads name the client, so a response routed to the
//! wrong client is caught), that every task is found again and ends as its
//! client expects, that the servers exit 0 at the end, and that each server's
//! resident memory and open descriptors stay flat (the samples after the
//! warm-up against those at the end). It prints those figures and exits
//! non-zero on any violation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::http::{HttpServer, McpClient, Sse};
use wasm_mcp_tests::process::{ServerProcess, Stderr, serve_command};
use wasm_mcp_tests::stdio::{ConcurrentStdioClient, ProblemSink};
use wasm_mcp_tests::{PluginDir, jsonrpc, plugin_wasm, proc_stat};

/// How long any one response may take before it counts as lost.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a server may take to exit once asked to.
const EXIT_LIMIT: Duration = Duration::from_secs(60);
/// How long a task is kept: the client checks each one well within it, so
/// the tasks a session holds stay far below the server's `max_tasks`.
const TASK_TTL_MS: u64 = 20_000;
/// Resident memory may grow this much from the warm-up to the end...
const RSS_GROWTH_MIB: u64 = 48;
/// ...and open descriptors this many.
const FD_GROWTH: usize = 16;

/// The servers' stderr: warnings, but not the reload errors the churn causes on purpose.
const QUIET_LOG: &str = "warn,wasm_mcp::reload=off";

/// The manifest that makes the spinner's `sleep` and `spin_checked` task-capable.
const SPINNER_MANIFEST: &[u8] =
    b"[tools.sleep]\ntask_support = \"optional\"\n\n[tools.spin_checked]\ntask_support = \"optional\"\n";

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, got {value:?}")),
        Err(_) => default,
    }
}

/// What every thread counts, and every violation seen.
#[derive(Default)]
struct Tally {
    requests: AtomicU64,
    responses: AtomicU64,
    cancelled: AtomicU64,
    tasks_created: AtomicU64,
    tasks_completed: AtomicU64,
    tasks_cancelled: AtomicU64,
    /// Tasks this client came back to only after their ttl (so they were purged).
    tasks_expired: AtomicU64,
    plugin_changes: AtomicU64,
    violations: Mutex<Vec<String>>,
}

impl Tally {
    fn violation(&self, what: String) {
        let mut violations = self.violations.lock().unwrap();
        if violations.len() < 50 {
            eprintln!("soak: VIOLATION: {what}");
        }
        violations.push(what);
    }

    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// One client's way of sending requests to its server.
trait Client: Send + Sync {
    /// Sends request `id` and returns its response; with `cancel_after`,
    /// cancels it after that long unless it was answered, and then `None`
    /// means no response came (which the protocol allows). Records a
    /// violation for a lost response.
    fn request(&self, id: &str, method: &str, params: Value, cancel_after: Option<Duration>) -> Option<Value>;
}

/// A stdio server: one client, whose workers share it.
impl Client for ConcurrentStdioClient {
    fn request(&self, id: &str, method: &str, params: Value, cancel_after: Option<Duration>) -> Option<Value> {
        ConcurrentStdioClient::request(self, id, method, params, cancel_after)
    }
}

/// One HTTP session: each request is a POST whose SSE stream must carry
/// exactly one response, its own.
struct HttpSession {
    client: McpClient,
    tally: Arc<Tally>,
}

impl HttpSession {
    fn connect(url: &str, tally: Arc<Tally>) -> Self {
        let mut client = McpClient::with_timeout(url, RESPONSE_TIMEOUT);
        client.initialize(json!({}));
        Self { client, tally }
    }
}

impl Client for HttpSession {
    fn request(&self, id: &str, method: &str, params: Value, cancel_after: Option<Duration>) -> Option<Value> {
        let canceller = cancel_after.map(|after| {
            let (client, cancel) = (self.client.clone(), jsonrpc::cancelled(id));
            thread::spawn(move || {
                thread::sleep(after);
                let _ = client.try_post(&cancel);
            })
        });
        let mut responses = Vec::new();
        match self.client.try_post(&jsonrpc::request(id, method, params)) {
            Ok(response) if response.status().is_success() => {
                let mut stream = Sse::new(response);
                while let Ok(Some(event)) = stream.try_next_event() {
                    if let Some(message) = event.message().filter(|m| m.get("method").is_none()) {
                        responses.push(message);
                    }
                }
            }
            Ok(response) => self
                .tally
                .violation(format!("http: {method} {id} got HTTP {}", response.status())),
            Err(e) => self.tally.violation(format!("http: {method} {id} failed: {e}")),
        }
        if let Some(canceller) = canceller {
            let _ = canceller.join();
        }
        if responses.len() > 1 {
            self.tally
                .violation(format!("http: {} responses on the stream of {id}", responses.len()));
        }
        let response = responses.into_iter().next();
        if response.is_none() && cancel_after.is_none() {
            self.tally
                .violation(format!("http: the stream of {method} {id} ended without a response"));
        }
        response
    }
}

// ---- what each worker does -----------------------------------------------------

/// A task this worker created and will check again.
struct OpenTask {
    id: String,
    ms: u64,
    created: Instant,
}

struct Worker {
    name: String,
    client: Arc<dyn Client>,
    tally: Arc<Tally>,
    next: u64,
    tasks: Vec<OpenTask>,
}

impl Worker {
    fn new_id(&mut self) -> String {
        self.next += 1;
        format!("{}-{}", self.name, self.next)
    }

    /// Sends a request; checks that its response has its id and, if answered, returns it.
    fn call(&mut self, method: &str, params: Value, cancel_after: Option<Duration>) -> Option<Value> {
        let id = self.new_id();
        Tally::count(&self.tally.requests);
        match self.client.request(&id, method, params, cancel_after) {
            Some(message) => {
                Tally::count(&self.tally.responses);
                if message["id"] != json!(id) {
                    self.tally
                        .violation(format!("{method} {id}: a response for another request: {message:.300}"));
                }
                Some(message)
            }
            None => {
                Tally::count(&self.tally.cancelled);
                None
            }
        }
    }

    fn expect_result(&self, what: &str, message: &Value) -> Option<Value> {
        match message.get("result") {
            Some(result) => Some(result.clone()),
            None => {
                self.tally
                    .violation(format!("{}: {what} failed: {message:.300}", self.name));
                None
            }
        }
    }

    /// Echo: the payload names this worker and request, and must come back.
    fn echo(&mut self) {
        let payload = format!("{} payload {}", self.name, self.next + 1);
        let Some(message) = self.call(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": payload}}),
            None,
        ) else {
            return;
        };
        if let Some(result) = self.expect_result("echo", &message) {
            let text = result
                .pointer("/content/0/text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if text != payload {
                self.tally
                    .violation(format!("{}: echo of {payload:?} came back as {text:?}", self.name));
            }
        }
    }

    fn sleep_call(&mut self) {
        let ms = fastrand::u64(0..30);
        if let Some(message) = self.call("tools/call", json!({"name": "sleep", "arguments": {"ms": ms}}), None)
            && let Some(result) = self.expect_result("sleep", &message)
        {
            let text = result.pointer("/content/0/text").and_then(Value::as_str);
            if text != Some(&format!("slept {ms} ms")) {
                self.tally
                    .violation(format!("{}: sleep {ms} answered {result}", self.name));
            }
        }
    }

    /// A call cancelled while it runs: one response or none is fine, and a
    /// response, if any, is its own (checked by `call`).
    fn cancelled_call(&mut self) {
        let after = Duration::from_millis(fastrand::u64(0..50));
        self.call(
            "tools/call",
            json!({"name": "spin_checked", "arguments": {}}),
            Some(after),
        );
    }

    /// Whatever the churned plugin is right now: any answer is fine, as long as there is one.
    fn churned_call(&mut self) {
        self.call("tools/call", json!({"name": "version", "arguments": {}}), None);
    }

    fn subscribe(&mut self) {
        let uri = format!("versioned://version?{}", fastrand::u8(0..8));
        for method in ["resources/subscribe", "resources/unsubscribe"] {
            if let Some(message) = self.call(method, json!({"uri": uri}), None) {
                self.expect_result(method, &message);
            }
        }
    }

    fn list(&mut self) {
        if let Some(message) = self.call("tools/list", json!({}), None) {
            self.expect_result("tools/list", &message);
        }
    }

    fn create_task(&mut self) {
        let ms = fastrand::u64(0..2000);
        let params = json!({"name": "sleep", "arguments": {"ms": ms}, "task": {"ttl": TASK_TTL_MS}});
        let Some(message) = self.call("tools/call", params, None) else {
            return;
        };
        let Some(result) = self.expect_result("a task-augmented call", &message) else {
            return;
        };
        match result.pointer("/task/taskId").and_then(Value::as_str) {
            Some(id) => {
                Tally::count(&self.tally.tasks_created);
                self.tasks.push(OpenTask {
                    id: id.to_owned(),
                    ms,
                    created: Instant::now(),
                });
            }
            None => self.tally.violation(format!("{}: no task in {result}", self.name)),
        }
    }

    /// Settles every task of this worker that is a third through its ttl,
    /// oldest first, then one more at random.
    fn settle_tasks(&mut self) {
        while self
            .tasks
            .first()
            .is_some_and(|task| task.created.elapsed() > Duration::from_millis(TASK_TTL_MS / 3))
        {
            let task = self.tasks.remove(0);
            self.settle(task);
        }
        if !self.tasks.is_empty() {
            let task = self.tasks.remove(fastrand::usize(..self.tasks.len()));
            self.settle(task);
        }
    }

    /// Finds `task` again, then either cancels it or waits for its result.
    fn settle(&mut self, task: OpenTask) {
        let asked = Instant::now();
        let Some(found) = self.call("tasks/get", json!({"taskId": task.id}), None) else {
            return;
        };
        // A task past its ttl is purged by design; one within it must be found.
        if found.get("error").is_some() && asked.duration_since(task.created) >= Duration::from_millis(TASK_TTL_MS) {
            Tally::count(&self.tally.tasks_expired);
            return;
        }
        let what = format!(
            "tasks/get of task {} created {} ms before, with a ttl of {TASK_TTL_MS} ms",
            task.id,
            asked.duration_since(task.created).as_millis()
        );
        let Some(status) = self.expect_result(&what, &found) else {
            return;
        };
        let terminal = ["completed", "cancelled", "failed"];
        let running = !terminal.contains(&status["status"].as_str().unwrap_or_default());
        if running && fastrand::bool() {
            let Some(message) = self.call("tasks/cancel", json!({"taskId": task.id}), None) else {
                return;
            };
            // It may have finished in between: then cancel says it already ended.
            if message.get("result").is_some() {
                Tally::count(&self.tally.tasks_cancelled);
                return;
            }
        }
        let Some(message) = self.call("tasks/result", json!({"taskId": task.id}), None) else {
            return;
        };
        let status = self
            .call("tasks/get", json!({"taskId": task.id}), None)
            .and_then(|m| m.get("result").cloned())
            .unwrap_or_default();
        match status["status"].as_str() {
            Some("completed") => {
                let text = message.pointer("/result/content/0/text").and_then(Value::as_str);
                if text != Some(&format!("slept {} ms", task.ms)) {
                    self.tally.violation(format!(
                        "{}: task {} of {} ms gave {message:.300}",
                        self.name, task.id, task.ms
                    ));
                }
                Tally::count(&self.tally.tasks_completed);
            }
            Some("cancelled") => Tally::count(&self.tally.tasks_cancelled),
            other => self.tally.violation(format!(
                "{}: task {} is {other:?} after tasks/result: {message:.300}",
                self.name, task.id
            )),
        }
    }

    /// One flood from the flood plugin: its call must answer as usual, the
    /// floods bounded on the way (the memory check sees that they are).
    fn flood(&mut self) {
        let (tool, arguments, answer) = match fastrand::u8(0..3) {
            0 => (
                "flood_log_flood",
                json!({"count": 40, "bytes": 256 << 10}),
                "logged 40 messages of 262144 bytes",
            ),
            1 => ("flood_progress_flood", json!({"count": 20_000}), "sent 20000 progress"),
            _ => (
                "flood_updates_flood",
                json!({"count": 5_000, "uris": 8}),
                "announced 5000 updates",
            ),
        };
        let params = json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": self.next + 1}});
        if let Some(message) = self.call("tools/call", params, None)
            && let Some(result) = self.expect_result(tool, &message)
        {
            let text = result.pointer("/content/0/text").and_then(Value::as_str);
            if text != Some(answer) {
                self.tally
                    .violation(format!("{}: {tool} answered {result:.300}", self.name));
            }
        }
    }

    fn run(mut self, until: Instant) {
        while Instant::now() < until {
            match fastrand::u8(0..100) {
                0..3 => self.flood(),
                3..25 => self.echo(),
                25..40 => self.sleep_call(),
                40..50 => self.cancelled_call(),
                50..58 => self.churned_call(),
                58..66 => self.subscribe(),
                66..72 => self.list(),
                72..86 => self.create_task(),
                _ => self.settle_tasks(),
            }
        }
        while !self.tasks.is_empty() {
            self.settle_tasks();
        }
    }
}

// ---- the plugin that keeps changing ---------------------------------------------

/// Replaces, corrupts, deletes and restores `churn.wasm` until `stop`; leaves it restored.
fn churn_plugin(dir: &std::path::Path, stop: &AtomicBool, tally: &Tally) {
    let target = dir.join("churn.wasm");
    let versions = [plugin_wasm("versioned-v1"), plugin_wasm("versioned-v2")];
    while !stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(fastrand::u64(200..1500)));
        let changed = match fastrand::u8(0..5) {
            0 | 1 => std::fs::copy(&versions[fastrand::usize(..2)], &target).map(drop),
            2 => std::fs::write(&target, b"\0asm\x0d\0\x01\0 not really a component"),
            3 => std::fs::read(&versions[0]).and_then(|bytes| std::fs::write(&target, &bytes[..bytes.len() / 2])),
            _ => match std::fs::remove_file(&target) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                removed => removed,
            },
        };
        if let Err(e) = changed {
            tally.violation(format!("churn: cannot change {}: {e}", target.display()));
        }
        Tally::count(&tally.plugin_changes);
    }
    let _ = std::fs::copy(&versions[0], &target);
}

// ---- memory and descriptors --------------------------------------------------------

/// One reading of a server.
#[derive(Clone, Copy)]
struct Sample {
    rss_kib: u64,
    fds: usize,
}

fn sample(pid: u32) -> Option<Sample> {
    std::panic::catch_unwind(|| Sample {
        rss_kib: proc_stat::rss_kib(pid),
        fds: proc_stat::open_fds(pid),
    })
    .ok()
}

/// The median of a few samples, so one busy moment does not decide.
fn median(samples: &[Sample]) -> Sample {
    let mut rss: Vec<u64> = samples.iter().map(|s| s.rss_kib).collect();
    let mut fds: Vec<usize> = samples.iter().map(|s| s.fds).collect();
    rss.sort_unstable();
    fds.sort_unstable();
    Sample {
        rss_kib: rss[rss.len() / 2],
        fds: fds[fds.len() / 2],
    }
}

fn main() {
    let seconds = env_number("SOAK_SECONDS", 600);
    let stdio_servers = env_number("SOAK_STDIO_SERVERS", 2) as usize;
    let stdio_workers = env_number("SOAK_STDIO_WORKERS", 4) as usize;
    let http_clients = env_number("SOAK_HTTP_CLIENTS", 6) as usize;
    let duration = Duration::from_secs(seconds);
    let warm_up = (duration / 5).max(Duration::from_secs(10)).min(duration / 2);
    let sample_every = (duration / 60).clamp(Duration::from_millis(500), Duration::from_secs(5));
    println!(
        "soak: {seconds} s; {stdio_servers} stdio servers x {stdio_workers} workers, {http_clients} HTTP sessions; \
         warm-up {} s",
        warm_up.as_secs()
    );

    let plugins = PluginDir::with(&["raw-echo", "spinner", "flood"]);
    plugins.add_file("spinner.toml", SPINNER_MANIFEST);
    // Its tools as flood_*: its echo leaves raw-echo's its name.
    plugins.add_file("flood.toml", b"prefix = \"flood\"\n");
    plugins.add_plugin_as("versioned-v1", "churn");
    let cache = tempfile::tempdir().expect("a cache directory");
    let tally = Arc::new(Tally::default());

    let problem: ProblemSink = {
        let tally = tally.clone();
        Arc::new(move |what| tally.violation(what))
    };
    let mut stdio: Vec<(String, ServerProcess, Arc<ConcurrentStdioClient>)> = Vec::new();
    let mut clients: Vec<(String, Arc<dyn Client>)> = Vec::new();
    for n in 0..stdio_servers {
        let mut command = serve_command(plugins.path());
        command
            .arg("--cache-dir")
            .arg(cache.path())
            .env("WASM_MCP_LOG", QUIET_LOG);
        let (process, client) =
            ConcurrentStdioClient::start(command, Stderr::Echoed, RESPONSE_TIMEOUT, problem.clone());
        let name = format!("stdio{n}");
        let init = jsonrpc::initialize_params(&name, json!({}));
        if client
            .request(&format!("{name}-init"), "initialize", init, None)
            .is_none()
        {
            panic!("{name} did not answer initialize");
        }
        client.send(&jsonrpc::notification("notifications/initialized", Value::Null));
        for w in 0..stdio_workers {
            clients.push((format!("{name}.w{w}"), client.clone()));
        }
        stdio.push((name, process, client));
    }
    let mut command = serve_command(plugins.path());
    command
        .args(["--http", "127.0.0.1:0", "--cache-dir"])
        .arg(cache.path())
        .env("WASM_MCP_LOG", format!("{QUIET_LOG},wasm_mcp::transport::http=info"));
    let mut http = HttpServer::spawn(command, Stderr::Echoed);
    for n in 0..http_clients {
        let client: Arc<dyn Client> = Arc::new(HttpSession::connect(&http.url, tally.clone()));
        clients.push((format!("http{n}"), client));
    }

    let started = Instant::now();
    let until = started + duration;
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (dir, stop, tally) = (plugins.path().to_owned(), stop.clone(), tally.clone());
        thread::spawn(move || churn_plugin(&dir, &stop, &tally))
    };
    let mut pids: Vec<(String, u32)> = stdio
        .iter()
        .map(|(name, process, _)| (name.clone(), process.pid()))
        .collect();
    pids.push(("http".to_owned(), http.pid()));
    let sampler = {
        let (stop, pids) = (stop.clone(), pids.clone());
        thread::spawn(move || {
            let mut samples: HashMap<String, Vec<(Duration, Sample)>> = HashMap::new();
            while !stop.load(Ordering::Relaxed) {
                for (name, pid) in &pids {
                    if let Some(s) = sample(*pid) {
                        samples.entry(name.clone()).or_default().push((started.elapsed(), s));
                    }
                }
                thread::sleep(sample_every);
            }
            samples
        })
    };
    let workers: Vec<_> = clients
        .into_iter()
        .map(|(name, client)| {
            let worker = Worker {
                name,
                client,
                tally: tally.clone(),
                next: 0,
                tasks: Vec::new(),
            };
            thread::spawn(move || worker.run(until))
        })
        .collect();
    let progress = {
        let (stop, tally) = (stop.clone(), tally.clone());
        thread::spawn(move || {
            let every = Duration::from_secs(30).min(duration / 4);
            let mut next = Instant::now() + every;
            while !stop.load(Ordering::Relaxed) {
                thread::sleep(Duration::from_millis(200));
                if Instant::now() < next {
                    continue;
                }
                next += every;
                println!(
                    "soak: {:>4} s: {} requests, {} responses, {} tasks, {} plugin changes, {} violations",
                    started.elapsed().as_secs(),
                    tally.requests.load(Ordering::Relaxed),
                    tally.responses.load(Ordering::Relaxed),
                    tally.tasks_created.load(Ordering::Relaxed),
                    tally.plugin_changes.load(Ordering::Relaxed),
                    tally.violations.lock().unwrap().len()
                );
            }
        })
    };
    for worker in workers {
        if worker.join().is_err() {
            tally.violation("a client thread panicked".into());
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = churn.join();
    let _ = progress.join();
    let samples = sampler.join().expect("the sampler");

    // Every server shuts down cleanly: stdio on stdin closing, HTTP on SIGTERM.
    for (_, _, client) in &stdio {
        client.close();
    }
    let mut exits = Vec::new();
    let mut late_responses = 0;
    for (name, mut process, client) in stdio {
        late_responses += client.late_responses();
        exits.push((name, process.exit_within(EXIT_LIMIT)));
    }
    // (Unless it has already exited.)
    if http.exit_within(Duration::ZERO).is_none() {
        http.send_signal("TERM");
    }
    exits.push(("http".to_owned(), http.exit_within(EXIT_LIMIT)));
    for (name, status) in &exits {
        if !status.is_some_and(|s| s.success()) {
            tally.violation(format!("{name}: did not exit cleanly: {status:?}"));
        }
    }

    println!("\nsoak: finished after {} s", started.elapsed().as_secs());
    let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
    println!(
        "  requests {}  responses {}  cancelled without response {}  late responses to cancelled {}",
        count(&tally.requests),
        count(&tally.responses),
        count(&tally.cancelled),
        late_responses
    );
    println!(
        "  tasks created {}  completed {}  cancelled {}  expired before the client came back {}  plugin changes {}",
        count(&tally.tasks_created),
        count(&tally.tasks_completed),
        count(&tally.tasks_cancelled),
        count(&tally.tasks_expired),
        count(&tally.plugin_changes)
    );
    let lost = count(&tally.tasks_created)
        - count(&tally.tasks_completed)
        - count(&tally.tasks_cancelled)
        - count(&tally.tasks_expired);
    if lost > 0 {
        tally.violation(format!("{lost} task(s) neither completed nor cancelled"));
    }
    println!("  server   RSS after warm-up -> end (MiB)   open fds after warm-up -> end");
    let mut names: Vec<_> = samples.keys().cloned().collect();
    names.sort();
    for name in names {
        let series = &samples[&name];
        let after_warm_up: Vec<Sample> = series.iter().filter(|(t, _)| *t >= warm_up).map(|(_, s)| *s).collect();
        if after_warm_up.len() < 6 {
            tally.violation(format!(
                "{name}: too few samples after the warm-up ({})",
                after_warm_up.len()
            ));
            continue;
        }
        let window = (after_warm_up.len() / 5).max(3);
        let start = median(&after_warm_up[..window]);
        let end = median(&after_warm_up[after_warm_up.len() - window..]);
        let peak = after_warm_up.iter().map(|s| s.rss_kib).max().unwrap_or_default();
        println!(
            "  {name:<8} {:>7.1} -> {:>7.1} (peak {:>7.1})        {:>4} -> {:>4}",
            start.rss_kib as f64 / 1024.0,
            end.rss_kib as f64 / 1024.0,
            peak as f64 / 1024.0,
            start.fds,
            end.fds
        );
        if end.rss_kib > start.rss_kib + RSS_GROWTH_MIB * 1024 {
            tally.violation(format!(
                "{name}: resident memory grew from {} KiB to {} KiB after the warm-up",
                start.rss_kib, end.rss_kib
            ));
        }
        if end.fds > start.fds + FD_GROWTH {
            tally.violation(format!(
                "{name}: open descriptors grew from {} to {}",
                start.fds, end.fds
            ));
        }
    }
    let violations = tally.violations.lock().unwrap();
    if violations.is_empty() {
        println!("soak: PASS (no violations)");
    } else {
        println!("soak: FAIL: {} violation(s); the first ones:", violations.len());
        for violation in violations.iter().take(20) {
            println!("  {violation}");
        }
        std::process::exit(1);
    }
}
