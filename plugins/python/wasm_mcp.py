"""wasm_mcp: write wasm-mcp plugins in Python with a few decorators.

Built with componentize-py against the `plugin` world of `wit/plugin.wit`.
Decorate plain functions; the type hints become the input schema, the
docstring the description (its `Args:` section describes each argument):

    from wasm_mcp import tool, resource, prompt, log, progress, ask, elicit
    from wasm_mcp import Tools, Resources, Prompts, Completion  # the exports

    @tool(read_only=True)
    def shout(text: str, times: int = 1) -> str:
        \"\"\"Upper-cases text.

        Args:
            text: What to shout.
            times: How often.
        \"\"\"
        return " ".join([text.upper()] * times)

A tool returns a `str` (text content) or a `dict` (structured content, also
sent as JSON text); raising `ToolError` (or any exception) gives a result with
`isError` and the message. Decorated functions stay plain functions, so their
logic can be unit-tested with `python3 -m unittest`, without wasm: the
component bindings (`wit_world`) are imported only when the host calls in,
and `log` and `lists_changed` write to stderr when there is no host
(`progress` does nothing; `is_cancelled` and `run_as_task` return False).

`ask` puts questions to the client (a form for the user, the client's model,
its roots) under keys you name, all in one round.

A long tool declares `@tool(task_support="optional")` (or `"required"`; the
default is `"forbidden"`), calls `run_as_task()` once it knows the call will
take a while (a 2026-07-28 client with the tasks extension then gets a task at
once, and the call runs on), and checks `is_cancelled()` between steps.
`lists_changed(tools=True)` (or `prompts=`, `resources=`) says that what the
plugin lists may have changed: the host lists it again and tells the clients.

`@skill("reports/weekly", files=lambda: ["SKILL.md", "figures.md"])` on a
function of a file's path makes a skill the plugin writes as it is read (a
dynamic skill of the skills extension): the function returns the file's text,
or None for a file the skill does not have. It needs a world with the
`skills` export: put the line `# world: plugin-with-skills` (or
`# world: full-plugin` for a plugin that also keeps state) in app.py and
export `Skills` too.

`Bucket("notes")` keeps state between calls in a bucket the manifest grants
(`[keyvalue] buckets = ["notes"]`), through `wasi:keyvalue`: `get`, `set`,
`delete`, `exists`, `keys`, `increment` and `update` (compare-and-swap). It
needs the `stateful-plugin` world: put the line `# world: stateful-plugin` in
the plugin's app.py and `make plugins` builds it for that world.
"""

import inspect
import json
import sys
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = [
    "tool", "resource", "prompt", "log", "progress", "is_cancelled", "ToolError",
    "run_as_task", "lists_changed",
    "ask", "elicit", "sample", "roots", "Elicited", "ClientError", "Bucket", "StateError",
    "skill", "Tools", "Resources", "Prompts", "Completion", "Skills", "input_schema",
]


class ToolError(Exception):
    """A failure the model should see (a result with `isError: true`)."""


@dataclass
class _Tool:
    fn: Callable[..., Any]
    title: Optional[str]
    read_only: Optional[bool]
    task_support: str


@dataclass
class _Resource:
    fn: Callable[[], Any]
    uri: str
    name: str
    mime_type: Optional[str]


@dataclass
class _Skill:
    files: Callable[[], list]
    read: Callable[[str], Optional[str]]


_tools: dict = {}
_resources: dict = {}
_prompts: dict = {}
_skills: dict = {}


# ---- decorators ---------------------------------------------------------------

_TASK_SUPPORT = ("forbidden", "optional", "required")


def tool(fn=None, *, title: Optional[str] = None, read_only: Optional[bool] = None,
         task_support: str = "forbidden"):
    """Registers `fn` as a tool named after it; `task_support` ("forbidden",
    "optional" or "required") says whether a call may (or must) run as a task."""
    if task_support not in _TASK_SUPPORT:
        raise ValueError(f"unknown task support {task_support!r}; use one of {', '.join(_TASK_SUPPORT)}")

    def register(fn):
        _tools[fn.__name__] = _Tool(fn, title, read_only, task_support)
        return fn
    return register(fn) if fn is not None else register


def resource(uri: str, *, name: Optional[str] = None, mime_type: Optional[str] = "text/plain"):
    """Registers `fn()` (returning `str` or `bytes`) as the resource at `uri`."""
    def register(fn):
        _resources[uri] = _Resource(fn, uri, name or fn.__name__, mime_type)
        return fn
    return register


def prompt(fn=None):
    """Registers `fn` as a prompt: its `str` parameters are the arguments (required
    unless they have a default); it returns the user message's text."""
    def register(fn):
        _prompts[fn.__name__] = fn
        return fn
    return register(fn) if fn is not None else register


def skill(path: str, *, files: Callable[[], list]):
    """Registers `fn(file)` as the maker of the files of the skill at `path`
    (`reports/weekly`, served at skill://reports/weekly/FILE): `files()` says
    which files it has now (`SKILL.md` among them), `fn` returns one's text,
    or None for a file it does not have."""
    def register(fn):
        _skills[path] = _Skill(files, fn)
        return fn
    return register


# ---- plugin state (wasi:keyvalue) ----------------------------------------------

class StateError(Exception):
    """The host refused or failed a state operation; the message says why
    (a bucket the manifest does not grant names the line to add)."""


def _state_error(error) -> StateError:
    from wit_world.imports import store
    if isinstance(error, store.Error_Other):
        return StateError(error.value)
    if isinstance(error, store.Error_NoSuchStore):
        return StateError("no such bucket")
    return StateError("access to the bucket was denied")


def _kv(operation, *args):
    """`operation(*args)`, a store error raised as a `StateError`."""
    from componentize_py_types import Err
    try:
        return operation(*args)
    except Err as err:
        raise _state_error(err.value) from None


class Bucket:
    """A bucket of the plugin's state, which the host keeps (across restarts,
    and for every replica sharing a Redis store). Values are bytes (`str` is
    stored as UTF-8); a counter is its decimal text."""

    def __init__(self, name: str):
        from wit_world.imports import store
        self._bucket = _kv(store.open, name)

    def get(self, key: str) -> Optional[bytes]:
        return _kv(self._bucket.get, key)

    def get_text(self, key: str) -> Optional[str]:
        value = self.get(key)
        return None if value is None else value.decode("utf-8", "replace")

    def set(self, key: str, value) -> None:
        _kv(self._bucket.set, key, value.encode() if isinstance(value, str) else bytes(value))

    def delete(self, key: str) -> None:
        _kv(self._bucket.delete, key)

    def exists(self, key: str) -> bool:
        return _kv(self._bucket.exists, key)

    def keys_page(self, cursor: Optional[str] = None) -> tuple[list[str], Optional[str]]:
        """One page of keys and the cursor of the next (None: the last page)."""
        page = _kv(self._bucket.list_keys, cursor)
        return page.keys, page.cursor

    def keys(self) -> list[str]:
        keys, cursor = self.keys_page()
        while cursor is not None:
            more, cursor = self.keys_page(cursor)
            keys.extend(more)
        return keys

    def increment(self, key: str, delta: int = 1) -> int:
        """Adds `delta` to the counter `key` at once, whoever else counts."""
        from wit_world.imports import atomics
        return _kv(atomics.increment, self._bucket, key, delta)

    def update(self, key: str, change: Callable[[Optional[bytes]], bytes]) -> bytes:
        """Replaces the value of `key` with `change(the value now)` by
        compare-and-swap, running `change` again if another call changed it."""
        from componentize_py_types import Err
        from wit_world.imports import atomics
        cas = _kv(atomics.Cas.new, self._bucket, key)
        while True:
            value = change(_kv(cas.current))
            try:
                atomics.swap(cas, value)
                return value
            except Err as err:
                if isinstance(err.value, atomics.CasError_CasFailed):
                    cas = err.value.value
                    continue
                raise _state_error(err.value.value) from None


# ---- host imports -------------------------------------------------------------

_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _host():
    try:
        from wit_world.imports import host
    except ImportError:  # plain Python (unit tests): no host
        return None
    return host


def log(message: str, level: str = "info") -> None:
    """Sends a log message to the client (notifications/message)."""
    if level not in _LEVELS:
        raise ValueError(f"unknown log level {level!r}; use one of {', '.join(_LEVELS)}")
    host = _host()
    if host is None:
        print(f"[{level}] {message}", file=sys.stderr)
    else:
        host.log(host.LogLevel[level.upper()], message)


def progress(done: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
    """Reports progress on the current call (values must increase)."""
    host = _host()
    if host is not None:
        host.progress(float(done), None if total is None else float(total), message)


def is_cancelled() -> bool:
    """Whether the client has cancelled the current call: check it between steps."""
    host = _host()
    return host is not None and host.is_cancelled()


def run_as_task() -> bool:
    """Says that this call will take a while. For a 2026-07-28 client that
    negotiated the tasks extension, calling a tool with `task_support`
    "optional" or "required", the host answers with a task now and the call
    runs on. Returns whether the call now runs as a task (False elsewhere)."""
    host = _host()
    return host is not None and host.run_as_task()


def lists_changed(tools: bool = False, prompts: bool = False, resources: bool = False) -> None:
    """Says that the plugin's tools, prompts or resources (with templates) may
    have changed: the host lists the plugin again, in a fresh instance, and
    tells the clients to fetch those lists again."""
    named = {"tools": tools, "resources": resources, "prompts": prompts}
    kinds = [kind for kind, changed in named.items() if changed]
    if not kinds:
        raise ValueError("name a list that may have changed: lists_changed(tools=True, prompts=..., resources=...)")
    host = _host()
    if host is None:
        print(f"[lists changed] {', '.join(kinds)}", file=sys.stderr)
    else:
        host.lists_changed([host.ListKind[kind.upper()] for kind in kinds])


# ---- questions for the client ---------------------------------------------------

@dataclass
class _Elicit:
    message: str
    schema: dict


@dataclass
class _Sample:
    prompt: str
    max_tokens: int
    system: Optional[str]


class _Roots:
    pass


def elicit(message: str, schema: dict) -> _Elicit:
    """A question for the user: a form with `message`, its fields a flat JSON object schema."""
    return _Elicit(message, schema)


def sample(prompt: str, max_tokens: int = 256, system: Optional[str] = None) -> _Sample:
    """A question for the client's model: `prompt` as the user's message."""
    return _Sample(prompt, max_tokens, system)


def roots() -> _Roots:
    """A question for the client: its roots (the folders it works in)."""
    return _Roots()


@dataclass
class Elicited:
    """The user's answer to a form: `action` is "accept", "decline" or "cancel";
    `content` the submitted fields (accept only)."""
    action: str
    content: Optional[dict]


class ClientError(Exception):
    """A question the client did not answer: it lacks the capability, refused,
    timed out, or the request was cancelled."""


def ask(questions: dict) -> dict:
    """Asks the client several things at once, each under a key you name
    (`{"name": elicit(...), "capital": sample(...), "where": roots()}`), and
    returns the answers by key: an `Elicited` for a form, the text for a
    sample, a list of `{"uri", "name"}` for roots, or a `ClientError` (not
    raised) for a question the client did not answer.

    A 2026-07-28 client sees the keys; it answers in a later round, and the
    call may then run again from its start with the earlier answers: ask
    first, then act (see the plugin guide)."""
    host = _host()
    if host is None:
        return {key: ClientError("not running in the host: no client to ask") for key in questions}
    from componentize_py_types import Ok
    answers = host.ask([(key, _question(host, q)) for key, q in questions.items()])
    return {key: _answer(a.value) if isinstance(a, Ok) else _client_error(a.value)
            for key, a in zip(questions, answers)}


def _question(host, question):
    from wit_world.imports import types
    if isinstance(question, _Elicit):
        return host.Question_Elicit(host.Elicitation_Form(
            host.FormElicitation(question.message, json.dumps(question.schema))))
    if isinstance(question, _Sample):
        text = host.SamplingContent_Text(types.TextContent(question.prompt, None, None))
        message = host.SamplingMessage(types.Role.USER, [text])
        return host.Question_Sample(host.SamplingRequest(
            [message], None, question.system, None, None, question.max_tokens, [], None, None, None))
    if isinstance(question, _Roots):
        return host.Question_ListRoots()
    raise TypeError(f"not a question: {question!r}; build one with elicit(), sample() or roots()")


def _answer(answer):
    from wit_world.imports import host
    if isinstance(answer, host.Answer_Elicit):
        content = answer.value.content
        return Elicited(answer.value.action.name.lower(), None if content is None else json.loads(content))
    if isinstance(answer, host.Answer_Sample):
        return "".join(c.value.text for c in answer.value.content if isinstance(c, host.SamplingContent_Text))
    return [{"uri": r.uri, "name": r.name} for r in answer.value]


def _client_error(error) -> ClientError:
    from wit_world.imports import host
    if isinstance(error, host.ClientError_NotSupported):
        return ClientError(f"not supported: {error.value}")
    if isinstance(error, host.ClientError_Rejected):
        return ClientError(f"rejected ({error.value.code}): {error.value.message}")
    if isinstance(error, host.ClientError_TimedOut):
        return ClientError("timed out")
    return ClientError("cancelled")


# ---- schemas from signatures --------------------------------------------------

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_schema(hint) -> dict:
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return _type_schema(rest[0]) if len(rest) == 1 else {}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if hint is list or origin is list:
        return {"type": "array", "items": _type_schema(args[0])} if args else {"type": "array"}
    if hint is dict or origin is dict:
        return {"type": "object"}
    raise TypeError(f"no JSON Schema for the type hint {hint!r}: use str, int, float, bool, "
                    "Literal[...], Optional[...], list[...] or dict")


def _docs(fn) -> tuple:
    """(description, {argument: description}) from a Google-style docstring."""
    doc = inspect.getdoc(fn) or ""
    description, _, rest = doc.partition("\n\n")
    args, in_args = {}, False
    for line in rest.splitlines():
        if line.strip() in ("Args:", "Arguments:"):
            in_args = True
        elif in_args and line.startswith("    ") and ":" in line:
            name, _, text = line.strip().partition(":")
            args[name.strip()] = text.strip()
        elif in_args and line and not line.startswith(" "):
            in_args = False
    return " ".join(description.split()) or None, args


def _parameters(fn):
    hints = typing.get_type_hints(fn)
    for name, param in inspect.signature(fn).parameters.items():
        if name not in hints:
            raise TypeError(f"{fn.__name__}: parameter {name!r} needs a type hint")
        optional = param.default is not inspect.Parameter.empty
        yield name, hints[name], optional


def input_schema(fn) -> dict:
    """The JSON Schema of `fn`'s arguments, from its type hints and docstring."""
    _, arg_docs = _docs(fn)
    properties, required = {}, []
    for name, hint, optional in _parameters(fn):
        schema = _type_schema(hint)
        if name in arg_docs:
            schema["description"] = arg_docs[name]
        properties[name] = schema
        if not optional:
            required.append(name)
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


# ---- the exports componentize-py looks for ------------------------------------

def _text(text: str):
    from wit_world.imports import types
    return types.ContentBlock_Text(types.TextContent(text, None, None))


def _error(kind: str, message: str):
    from componentize_py_types import Err
    from wit_world.imports import types
    return Err(getattr(types, f"Error_{kind}")(message))


class Tools:
    def list_tools(self):
        from wit_world.exports import tools
        listed = []
        for name, t in _tools.items():
            description, _ = _docs(t.fn)
            annotations = None
            if t.read_only is not None:
                annotations = tools.ToolAnnotations(None, t.read_only, None, None, None)
            listed.append(tools.Tool(name, t.title, description, json.dumps(input_schema(t.fn)), None,
                                     annotations, [], tools.TaskSupport[t.task_support.upper()], None))
        return listed

    def call_tool(self, name, arguments):
        from wit_world.exports import tools
        if name not in _tools:
            raise _error("NotFound", f"no tool {name}")
        try:
            value = _tools[name].fn(**json.loads(arguments))
        except Exception as e:  # the model sees every failure of the tool itself
            message = str(e) if isinstance(e, ToolError) else f"{type(e).__name__}: {e}"
            return tools.CallToolResult([_text(message)], None, True, None)
        if isinstance(value, dict):
            structured = json.dumps(value)
            return tools.CallToolResult([_text(structured)], structured, False, None)
        return tools.CallToolResult([_text(str(value))], None, False, None)


class Resources:
    def list_resources(self):
        from wit_world.exports import resources
        return [resources.Resource(r.uri, r.name, None, _docs(r.fn)[0], r.mime_type, None, None, [], None)
                for r in _resources.values()]

    def list_resource_templates(self):
        return []

    def read_resource(self, uri):
        from wit_world.imports import types
        if uri not in _resources:
            raise _error("NotFound", f"no resource {uri}")
        r = _resources[uri]
        value = r.fn()
        body = types.ContentsBody_Blob(value) if isinstance(value, bytes) else types.ContentsBody_Text(str(value))
        return [types.ResourceContents(uri, r.mime_type, body, None)]


class Prompts:
    def list_prompts(self):
        from wit_world.exports import prompts
        listed = []
        for name, fn in _prompts.items():
            description, arg_docs = _docs(fn)
            arguments = [prompts.PromptArgument(arg, None, arg_docs.get(arg), not optional)
                         for arg, _, optional in _parameters(fn)]
            listed.append(prompts.Prompt(name, None, description, arguments, [], None))
        return listed

    def get_prompt(self, name, arguments):
        from wit_world.exports import prompts
        from wit_world.imports import types
        if name not in _prompts:
            raise _error("NotFound", f"no prompt {name}")
        fn = _prompts[name]
        known = {arg for arg, _, _ in _parameters(fn)}
        unknown = sorted(set(dict(arguments)) - known)
        if unknown:
            raise _error("InvalidParams", f"prompt {name} has no argument {', '.join(unknown)}")
        text = fn(**dict(arguments))
        message = prompts.PromptMessage(types.Role.USER, _text(text))
        return prompts.GetPromptResult(_docs(fn)[0], [message], None)


class Completion:
    def complete(self, request):
        from wit_world.exports import completion
        return completion.Completions([], None, False)


class Skills:
    def list_skills(self):
        return list(_skills)

    def list_skill_files(self, path):
        return list(_skill_at(path).files())

    def read_skill_file(self, path, file):
        from wit_world.imports import types
        text = _skill_at(path).read(file)
        if text is None:
            raise _error("NotFound", f"skill {path} has no file {file}")
        mime_type = "text/markdown" if file.endswith(".md") else "text/plain"
        return types.ResourceContents(f"skill://{path}/{file}", mime_type, types.ContentsBody_Text(text), None)


def _skill_at(path: str) -> _Skill:
    if path not in _skills:
        raise _error("NotFound", f"no skill at {path}")
    return _skills[path]
