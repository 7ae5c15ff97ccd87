"""The official Python SDK client (mcp 2.x, auto mode: it probes server/discover)
against `wasm-mcp serve`, over stdio and over Streamable HTTP, with the conformance
and text-tools plugins built by `make plugins`: it must get the 2026-07-28 revision,
lists and a structured call, multi round-trip elicitation, sampling and roots through
its callbacks, a prompt that asks, a subscriptions/listen stream that sees a plugin
file land; a call whose answer reaches a restarted server (sharing the request-state
key), which replays it; and, in legacy mode, the 2025-11-25 handshake on the same binary.

Usage: modern_client.py BINARY PLUGINS_DIST. Exits non-zero on the first failure."""

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

BINARY, DIST = sys.argv[1], Path(sys.argv[2])
asked = []


async def elicit(ctx, params):
    asked.append(("elicitation", params.message))
    field = "context" if "context" in params.message else "name"
    return types.ElicitResult(action="accept", content={field: "Ada"})


async def sample(ctx, params):
    asked.append(("sampling", params.messages[0].content.text))
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="Paris"), model="test-model"
    )


async def roots(ctx):
    asked.append(("roots", None))
    return types.ListRootsResult(roots=[types.Root(uri="file:///work")])


def text(result):
    return result.content[0].text


async def modern(server, plugins: Path, transport: str):
    asked.clear()
    async with Client(
        server, elicitation_callback=elicit, sampling_callback=sample, list_roots_callback=roots
    ) as client:
        assert client.session.protocol_version == "2026-07-28", client.session.protocol_version
        tools = await client.list_tools()
        assert any(t.name == "test_simple_text" for t in tools.tools)
        assert text(await client.call_tool("test_simple_text", {})) == "This is a simple text response for testing."
        assert text(await client.call_tool("test_input_required_result_elicitation", {})) == "Hello, Ada!"
        assert text(await client.call_tool("test_input_required_result_sampling", {})) == "Paris"
        assert text(await client.call_tool("test_input_required_result_list_roots", {})) == "Roots: file:///work"
        prompt = await client.get_prompt("test_input_required_result_prompt", {})
        assert prompt.messages[0].content.text == "Context: Ada", prompt
        assert [kind for kind, _ in asked] == ["elicitation", "sampling", "roots", "elicitation"], asked
        assert asked[1][1] == "What is the capital of France?", asked
        async with client.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed, subscription.honored
            shutil.copy(DIST / "text-tools.wasm", plugins / "text-tools.wasm")
            event = await asyncio.wait_for(anext(aiter(subscription)), 30)
            assert type(event).__name__ == "ToolsListChanged", event
        tools = await client.list_tools()
        assert any(t.name == "word_count" for t in tools.tools), [t.name for t in tools.tools]
    print(f"python SDK client ({transport}, 2026-07-28): lists, a call, elicitation, sampling, roots, a prompt, listen: ok")


async def legacy(server):
    async with Client(server, mode="legacy", elicitation_callback=elicit) as client:
        assert client.session.protocol_version == "2025-11-25", client.session.protocol_version
        result = await client.call_tool("test_input_required_result_elicitation", {})
        assert text(result) == "Hello, Ada!", result
    print("python SDK client (stdio, legacy mode): initialize, a call that elicits: ok")


def plugins_dir() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="wasm-mcp-sdk-"))
    shutil.copy(DIST / "conformance.wasm", directory / "conformance.wasm")
    return directory


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_http(plugins: Path, port: int, *extra: str) -> subprocess.Popen:
    """`wasm-mcp serve --http` on `port`, once its plugins are loaded."""
    server = subprocess.Popen(
        [BINARY, "serve", "--plugins", str(plugins), "--http", f"127.0.0.1:{port}", *extra],
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in server.stderr:
        if "plugins directory loaded" in line:
            break
    # Keep reading the server's log so it never blocks on a full pipe.
    threading.Thread(target=server.stderr.read, daemon=True).start()
    return server


def stop(server: subprocess.Popen):
    server.terminate()
    server.wait(timeout=30)


async def replay_across_a_restart():
    """The server that asked is replaced while the user answers: the retry reaches a new
    process holding nothing of the call, which replays it from the sealed requestState."""
    plugins, port = plugins_dir(), free_port()
    key = plugins / "request-state.key"
    key.write_bytes(os.urandom(32))
    servers = [start_http(plugins, port, "--request-state-key", str(key))]

    async def restart_then_answer(ctx, params):
        stop(servers[-1])
        servers.append(start_http(plugins, port, "--request-state-key", str(key)))
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    try:
        async with Client(f"http://127.0.0.1:{port}/mcp", elicitation_callback=restart_then_answer) as client:
            result = await client.call_tool("test_input_required_result_elicitation", {})
            assert text(result) == "Hello, Ada!", result
            assert len(servers) == 2, "the question went out once, to the first server"
    finally:
        stop(servers[-1])
    print("python SDK client (HTTP, 2026-07-28): an answer sent to a restarted server is replayed there: ok")


async def main():
    plugins = plugins_dir()
    stdio = StdioServerParameters(command=BINARY, args=["serve", "--plugins", str(plugins)])
    await modern(stdio, plugins, "stdio")
    await legacy(StdioServerParameters(command=BINARY, args=["serve", "--plugins", str(plugins_dir())]))

    plugins = plugins_dir()
    port = free_port()
    server = start_http(plugins, port)
    try:
        await modern(f"http://127.0.0.1:{port}/mcp", plugins, "HTTP")
    finally:
        stop(server)
    await replay_across_a_restart()


asyncio.run(main())
