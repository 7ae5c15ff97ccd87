"""Many replicas, from the outside: three `wasm-mcp serve --http` processes share a real
Redis (`--state redis://…`) behind a real HAProxy (round robin, no affinity), driven by the
official Python SDK client (mcp 2.x) in 2026-07-28 mode, with the tasks extension written
on the SDK's extension API. HAProxy names the replica that served each response
(`X-Served-By`), so every claim below is about which process did what:

- lists and calls spread over all three replicas;
- a task created through one replica is polled, answered (`tasks/update`) and cancelled
  through the others, and its result read through another;
- a multi round-trip retry that lands on another replica succeeds by replay;
- a resource update announced by a call on one replica reaches a `subscriptions/listen`
  stream held by another;
- one replica is killed with SIGKILL while tasks run on all three: every task still ends
  with a clear status (those of the killed one `failed`, saying its replica stopped; the
  others `completed`), printed as a table.

Redis and HAProxy are Debian's `redis-server` and `haproxy`, installed with apt when missing by
`make scale-deps` (a step of `make test`, as on a fresh machine), and started and stopped here,
on loopback only.

Usage: scale_out.py BINARY PLUGINS_DIST. Exits non-zero on the first failure."""

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import Field

BINARY, DIST = sys.argv[1], Path(sys.argv[2])
TASKS = "io.modelcontextprotocol/tasks"
REPLICAS = 3
LEASE_SECS = 1.5
DEADLINE = 60


# ---------------------------------------------------------------------------
# The tasks extension, on the SDK's extension API


class CreateTaskResult(types.Result):
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    ttl_ms: int | None = Field(default=None, alias="ttlMs")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


class TaskRequest(types.Request[TaskParams, str]):
    name_param = "taskId"  # Mcp-Name carries the task id, for routing


class AnyResult(types.Result):
    model_config = {"extra": "allow"}


class Tasks(ClientExtension):
    """Advertises the extension and resolves a task by polling it to its end."""

    identifier = TASKS

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve)]

    async def _resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        task = await until_ended(ctx.session, created.task_id)
        return types.CallToolResult.model_validate(task["result"])


async def task_request(session, method: str, task_id: str, **params) -> dict:
    request = TaskRequest(method=method, params=TaskParams(taskId=task_id, **params))
    result = await session.send_request(request, AnyResult)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def until(session, task_id: str, done, what: str) -> dict:
    deadline = time.monotonic() + DEADLINE
    while True:
        task = await task_request(session, "tasks/get", task_id)
        if done(task):
            return task
        assert time.monotonic() < deadline, f"task {task_id} never {what}; last: {task}"
        await asyncio.sleep(0.05)


def ended(task: dict) -> bool:
    return task["status"] in ("completed", "failed", "cancelled")


async def until_ended(session, task_id: str) -> dict:
    return await until(session, task_id, ended, "ended")


# ---------------------------------------------------------------------------
# The processes: Redis, three replicas, HAProxy


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, what: str, process: subprocess.Popen):
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{what} exited with {process.returncode}"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not listen on {port}")


def ensure_installed():
    missing = [command for command in ("redis-server", "haproxy") if not shutil.which(command)]
    assert not missing, f"{' and '.join(missing)} missing: `make scale-deps` installs them with apt"


class Replica:
    def __init__(self, name: str, port: int, plugins: Path, redis_port: int, key: Path):
        self.name, self.port, self.log = name, port, []
        self.process = subprocess.Popen(
            [
                BINARY, "serve", "--plugins", str(plugins), "--no-watch",
                "--http", f"127.0.0.1:{port}",
                "--state", f"redis://127.0.0.1:{redis_port}",
                "--request-state-key", str(key),
                "--task-lease", str(LEASE_SECS),
            ],
            stderr=subprocess.PIPE,
            text=True,
            # The end of a task's call is logged: the test sees a cancelled call stop.
            env={**os.environ, "WASM_MCP_LOG": "info,wasm_mcp::request::task_extension=debug"},
        )
        ready = threading.Event()

        def read():
            loaded = connected = False
            for line in self.process.stderr:
                self.log.append(line)
                loaded |= "plugins directory loaded" in line
                connected |= "answers: connected" in line
                if loaded and connected:
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        assert ready.wait(DEADLINE), f"replica {name} did not start:\n{''.join(self.log)}"

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


HAPROXY_CONFIG = """
global
    stats socket {stats} level admin
defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    retries 3
    option redispatch 1
frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance roundrobin
    http-response set-header X-Served-By %s
{servers}
# 2025-11-25 sessions live in one replica: the README's affinity on Mcp-Session-Id.
frontend legacy
    bind 127.0.0.1:{legacy_port}
    default_backend sessions
backend sessions
    balance roundrobin
    stick-table type string len 64 size 100k expire 30m
    stick on req.hdr(Mcp-Session-Id)
    stick store-response res.hdr(Mcp-Session-Id)
    http-response set-header X-Served-By %s
{servers}
"""


# ---------------------------------------------------------------------------
# The client, and which replica served what


class Served:
    """The replica HAProxy says served each request, in order, with its JSON-RPC method."""

    def __init__(self):
        self.log: list[tuple[str, str, dict]] = []

    async def hook(self, response):
        try:
            body = json.loads(response.request.content or b"{}")
        except ValueError:
            body = {}
        self.log.append((body.get("method", ""), response.headers.get("x-served-by", "?"), body))

    def by(self, method: str, match=lambda body: True) -> list[str]:
        return [replica for m, replica, body in self.log if m == method and match(body)]


async def never_asked(ctx, params):
    raise AssertionError(f"a task's question reached the elicitation callback: {params}")


def client(url: str, served: Served, **callbacks) -> Client:
    """The SDK client through the load balancer, declaring elicitation (a task's questions
    come through tasks/get, never the callback, unless a test passes its own)."""
    callbacks.setdefault("elicitation_callback", never_asked)
    http = create_mcp_http_client()
    http.event_hooks["response"].append(served.hook)
    return Client(streamable_http_client(url, http_client=http), extensions=[Tasks()], **callbacks)


def text(result) -> str:
    return result.content[0].text


def for_task(task_id: str):
    return lambda body: body.get("params", {}).get("taskId") == task_id


def called(tool: str):
    return lambda body: body.get("params", {}).get("name") == tool


async def spread(session, served: Served):
    for i in range(2 * REPLICAS):
        await session.list_tools()
        assert text(await session.call_tool("greet", {"name": f"n{i}"})) == f"Hello, n{i}!"
    lists, calls = set(served.by("tools/list")), set(served.by("tools/call", called("greet")))
    assert lists == calls == {f"r{i}" for i in range(REPLICAS)}, (lists, calls)
    print(f"lists and calls spread over every replica: tools/list on {sorted(lists)}, tools/call on {sorted(calls)}")


async def task_across_replicas(session, served: Served):
    created = await session.call_tool("slow_compute", {"seconds": 1, "label": "spread"}, allow_claimed=True)
    assert isinstance(created, CreateTaskResult), created
    task = await until_ended(session, created.task_id)
    assert task["status"] == "completed", task
    assert task["result"]["content"][0]["text"] == "Computed spread after 1 s", task
    owner = served.by("tools/call", called("slow_compute"))[-1]
    polled = set(served.by("tasks/get", for_task(created.task_id)))
    assert polled - {owner}, f"polled only through the replica that runs it ({owner})"
    print(f"a task created on {owner} is polled to its result through {sorted(polled)}")


async def answered_elsewhere(session, served: Served):
    created = await session.call_tool("confirm_delete", {"filename": "a.txt"}, allow_claimed=True)
    owner = served.by("tools/call", called("confirm_delete"))[-1]
    waiting = await until(session, created.task_id, lambda t: t["status"] == "input_required", "asked")
    assert "confirm" in waiting["inputRequests"], waiting
    # Answer through a replica other than the one running the call.
    while served.by("tasks/get", for_task(created.task_id))[-1] != owner:
        await task_request(session, "tasks/get", created.task_id)
    answer = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    await task_request(session, "tasks/update", created.task_id, inputResponses=answer)
    update = served.by("tasks/update", for_task(created.task_id))[-1]
    assert update != owner, (update, owner)
    task = await until_ended(session, created.task_id)
    assert task["status"] == "completed" and task["result"]["content"][0]["text"] == "Deleted a.txt", task
    print(f"a task running on {owner} asks; answered through {update} with tasks/update, it completes")


async def cancelled_elsewhere(session, served: Served, replicas: list[Replica]):
    created = await session.call_tool("slow_compute", {"seconds": 600}, allow_claimed=True)
    owner = served.by("tools/call", called("slow_compute"))[-1]
    while served.by("tasks/get", for_task(created.task_id))[-1:] != [owner]:
        await task_request(session, "tasks/get", created.task_id)
    log = replicas[int(owner[1:])].log
    started = time.monotonic()
    await task_request(session, "tasks/cancel", created.task_id)
    via = served.by("tasks/cancel", for_task(created.task_id))[-1]
    assert via != owner, (via, owner)
    task = await until_ended(session, created.task_id)
    assert task["status"] == "cancelled", task
    # The owner's instance stopped (a 600 s call): its end is in the owner's log.
    deadline = time.monotonic() + 10
    while not any(created.task_id in line and "was stopped" in line for line in log):
        assert time.monotonic() < deadline, "the owner never stopped the call:\n" + "".join(log[-20:])
        await asyncio.sleep(0.05)
    print(f"a task running on {owner} is cancelled through {via}; its instance stopped within "
          f"{time.monotonic() - started:.2f} s")


async def legacy_session_stays(url: str):
    """A 2025-11-25 client through the README's affinity setup: every request of its session
    reaches the replica that opened it, elicitation round trip included."""
    served = Served()

    async def elicit(ctx, params):
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with client(url, served, mode="legacy", elicitation_callback=elicit) as c:
        assert c.session.protocol_version == "2025-11-25", c.session.protocol_version
        for i in range(REPLICAS + 1):
            assert text(await c.call_tool("greet", {"name": f"s{i}"})) == f"Hello, s{i}!"
        result = await c.call_tool("test_input_required_result_elicitation", {})
        assert text(result) == "Hello, Ada!", result
    replicas = {replica for _, replica, _ in served.log}
    assert len(replicas) == 1, f"a legacy session moved between replicas: {served.log}"
    print(f"a 2025-11-25 session through Mcp-Session-Id affinity: all {len(served.log)} requests on {replicas.pop()}")


async def replayed_elsewhere(url: str):
    served = Served()

    async def elicit(ctx, params):
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with client(url, served, elicitation_callback=elicit) as c:
        result = await c.call_tool("test_input_required_result_elicitation", {})
        assert text(result) == "Hello, Ada!", result
    rounds = served.by("tools/call", called("test_input_required_result_elicitation"))
    assert len(rounds) == 2 and rounds[0] != rounds[1], rounds
    print(f"a multi round-trip call asks on {rounds[0]}; its retry on {rounds[1]} is replayed there")


async def update_reaches_other_listener(session, served: Served):
    uri = "notes://note/getting-started"
    async with session_listen(session, uri) as subscription:
        listener = served.by("subscriptions/listen")[-1]
        touched = []
        while not set(touched) - {listener}:
            await session.call_tool("touch_note", {"slug": "getting-started"})
            touched.append(served.by("tools/call", called("touch_note"))[-1])
        heard = 0
        while heard < len(touched):
            event = await asyncio.wait_for(anext(aiter(subscription)), 10)
            assert getattr(event, "uri", uri) == uri, event
            heard += 1
    print(f"a listen stream on {listener} hears the updates announced on {sorted(set(touched))}")


async def task_status_reaches_other_listener(session, served: Served, url: str):
    """A `subscriptions/listen` stream naming a task (the tasks extension's filter, sent as
    the SDK's own listen does not take task ids) on one replica hears the task's changes
    made on another, to its end."""
    created = await session.call_tool("slow_compute", {"seconds": 1.5, "label": "heard"}, allow_claimed=True)
    owner = served.by("tools/call", called("slow_compute"))[-1]
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": {"notifications": {"taskIds": [created.task_id]}, "_meta": meta}}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
               "mcp-method": "subscriptions/listen"}
    async with create_mcp_http_client() as http:
        while True:
            async with http.stream("POST", url, json=body, headers=headers) as stream:
                listener = stream.headers.get("x-served-by")
                if listener == owner:
                    continue  # round robin: the next one lands elsewhere
                statuses = []
                async for line in stream.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    message = json.loads(line[5:])
                    if message.get("method") == "notifications/tasks":
                        statuses.append(message["params"]["status"])
                        if ended(message["params"]):
                            break
                break
    assert statuses[-1] == "completed", statuses
    print(f"a listen stream on {listener} naming a task that runs on {owner} hears it end: {statuses}")


def session_listen(session_client, uri):
    return session_client.listen(resource_subscriptions=[uri])


class Redis:
    """A redis-server on loopback that keeps what it acknowledged across its own restart."""

    def __init__(self, work: Path):
        self.port, self.dir = free_port(), work
        self.start()

    def start(self):
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
             "--save", "", "--appendonly", "yes", "--appendfsync", "always"],
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(self.port, "redis-server", self.process)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def readiness(replicas: list[Replica]) -> list[tuple[int, str]]:
    """Each replica's /readyz: status and body."""
    answers = []
    for replica in replicas:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{replica.port}/readyz", timeout=5) as response:
                answers.append((response.status, response.read().decode().strip()))
        except urllib.error.HTTPError as error:
            answers.append((error.code, error.read().decode().strip()))
    return answers


def wait_for_log(replicas: list[Replica], text: str, since: list[int]):
    deadline = time.monotonic() + DEADLINE
    for replica, start in zip(replicas, since):
        while not any(text in line for line in replica.log[start:]):
            assert time.monotonic() < deadline, f"{replica.name} never logged {text!r}:\n" + "".join(replica.log[-10:])
            time.sleep(0.05)


async def store_down_and_back(session, served: Served, redis: Redis, replicas: list[Replica]):
    created = await session.call_tool("slow_compute", {"seconds": 0.2, "label": "kept"}, allow_claimed=True)
    assert (await until_ended(session, created.task_id))["status"] == "completed"
    assert readiness(replicas) == [(200, "ready")] * len(replicas), readiness(replicas)
    marks = [len(r.log) for r in replicas]
    redis.stop()
    wait_for_log(replicas, "does not answer", marks)
    not_ready = readiness(replicas)
    assert all(code == 503 and "the state store does not answer" in body for code, body in not_ready), not_ready
    assert text(await session.call_tool("greet", {"name": "still"})) == "Hello, still!"
    direct = await session.call_tool("slow_compute", {"seconds": 0.2, "label": "inline"}, allow_claimed=True)
    assert isinstance(direct, types.CallToolResult), f"no task while the store is down: {direct}"
    assert text(direct) == "Computed inline after 0.2 s", direct
    refusals = []
    for attempt in (
        lambda: task_request(session, "tasks/get", created.task_id),
        lambda: session.call_tool("failing_job", {}, allow_claimed=True),
    ):
        try:
            await attempt()
            raise AssertionError("a request that needs the store succeeded while it was down")
        except Exception as error:  # the SDK's MCPError
            message = str(error)
            assert f"the Redis state store at redis://127.0.0.1:{redis.port} does not answer" in message, message
            refusals.append(message)
    marks = [len(r.log) for r in replicas]
    redis.start()
    wait_for_log(replicas, "answers again: ready", marks)
    assert readiness(replicas) == [(200, "ready")] * len(replicas), readiness(replicas)
    task = await until_ended(session, created.task_id)
    assert task["status"] == "completed" and "Computed kept" in task["result"]["content"][0]["text"], task
    print("the store stopped: a plain call and a task-supporting one are served, tasks/get and a required task "
          f"fail with: {refusals[0]!r}; every replica logged it not ready and its /readyz said "
          f"{not_ready[0][1]!r}, then ready once Redis was back, and the task completed before is still there")


async def kill_one(session, served: Served, replicas: list[Replica]):
    # Round robin: each replica runs one call of each tool; `recompute` is declared idempotent.
    created = []
    for i in range(2 * REPLICAS):
        tool = ("slow_compute", "recompute")[i % 2]
        task = await session.call_tool(tool, {"seconds": 4, "label": f"k{i}"}, allow_claimed=True)
        created.append((task.task_id, tool, served.by("tools/call", called(tool))[-1]))
    assert {owner for _, _, owner in created} == {r.name for r in replicas}, created
    victim = replicas[0]
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait()
    killed_at = time.monotonic()
    outcomes = []
    for task_id, tool, owner in created:
        messages = set()

        def note(task):
            messages.add(task.get("statusMessage", ""))
            return ended(task)

        task = await until(session, task_id, note, "ended")
        outcomes.append((task_id, tool, owner, task, time.monotonic() - killed_at, messages))
    print(f"replica {victim.name} killed with SIGKILL while {len(created)} tasks ran:")
    print(f"  {'task':<34} {'tool':<13} {'ran on':<7} {'status':<10} {'ended after':>11}  message")
    for task_id, tool, owner, task, after, messages in outcomes:
        message = task.get("statusMessage") or task.get("result", {}).get("content", [{}])[0].get("text", "")
        print(f"  {task_id:<34} {tool:<13} {owner:<7} {task['status']:<10} {after:>10.2f}s  {message}")
        if owner == victim.name and tool == "slow_compute":
            assert task["status"] == "failed", task
            assert "the replica running it stopped" in task["statusMessage"], task
            assert task["error"]["message"], task
            continue
        assert task["status"] == "completed", task
        assert task["result"]["content"][0]["text"].startswith("Computed k"), task
        if owner == victim.name:
            again = [m for m in messages if m.startswith("running again from the start")]
            assert again, f"the idempotent task was not run again: {messages}"
            print(f"  {'':<34} {'':<13} {'':<7} (while it ran again: {again[0]!r})")


async def main():
    ensure_installed()
    work = Path(tempfile.mkdtemp(prefix="wasm-mcp-scale-"))
    plugins = work / "plugins"
    plugins.mkdir()
    for name in ("conformance", "notes"):
        shutil.copy(DIST / f"{name}.wasm", plugins / f"{name}.wasm")
    key = work / "request-state.key"
    key.write_bytes(os.urandom(32))
    processes = []
    redis = None
    try:
        redis = Redis(work)
        replicas = [Replica(f"r{i}", free_port(), plugins, redis.port, key) for i in range(REPLICAS)]
        processes.extend(replica.process for replica in replicas)
        lb_port = free_port()
        servers = "\n".join(f"    server {r.name} 127.0.0.1:{r.port} check inter 200ms fall 1 rise 2" for r in replicas)
        config = work / "haproxy.cfg"
        legacy_port = free_port()
        config.write_text(HAPROXY_CONFIG.format(
            stats=work / "haproxy.sock", port=lb_port, legacy_port=legacy_port, servers=servers))
        haproxy = subprocess.Popen(["haproxy", "-f", str(config), "-db"], stdout=subprocess.DEVNULL)
        processes.append(haproxy)
        wait_for_port(lb_port, "haproxy", haproxy)
        url = f"http://127.0.0.1:{lb_port}/mcp"

        served = Served()
        async with client(url, served) as c:
            assert c.session.protocol_version == "2026-07-28", c.session.protocol_version
            await spread(c.session, served)
            await task_across_replicas(c.session, served)
            await answered_elsewhere(c.session, served)
            await cancelled_elsewhere(c.session, served, replicas)
            await update_reaches_other_listener(c, served)
            await task_status_reaches_other_listener(c.session, served, url)
        await replayed_elsewhere(url)
        await legacy_session_stays(f"http://127.0.0.1:{legacy_port}/mcp")
        async with client(url, served) as c:
            await store_down_and_back(c.session, served, redis, replicas)
            await kill_one(c.session, served, replicas)
        print("scale-out (3 replicas, Redis, HAProxy, python SDK client, 2026-07-28): ok")
    finally:
        if redis:
            redis.stop()
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
        shutil.rmtree(work, ignore_errors=True)


asyncio.run(main())
