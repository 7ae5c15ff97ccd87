"""wasm_mcp: write wasm-mcp plugins in Python with a few decorators.

Built with componentize-py against the `plugin` world of `wit/plugin.wit`.
Decorate plain functions; the type hints become the input schema, the
docstring the description (its `Args:` section describes each argument):

    from wasm_mcp import tool, resource, prompt, log, progress
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
and `log`/`progress` write to stderr when there is no host.
"""

import inspect
import json
import sys
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = [
    "tool", "resource", "prompt", "log", "progress", "ToolError",
    "Tools", "Resources", "Prompts", "Completion", "input_schema",
]


class ToolError(Exception):
    """A failure the model should see (a result with `isError: true`)."""


@dataclass
class _Tool:
    fn: Callable[..., Any]
    title: Optional[str]
    read_only: Optional[bool]


@dataclass
class _Resource:
    fn: Callable[[], Any]
    uri: str
    name: str
    mime_type: Optional[str]


_tools: dict = {}
_resources: dict = {}
_prompts: dict = {}


# ---- decorators ---------------------------------------------------------------

def tool(fn=None, *, title: Optional[str] = None, read_only: Optional[bool] = None):
    """Registers `fn` as a tool named after it."""
    def register(fn):
        _tools[fn.__name__] = _Tool(fn, title, read_only)
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
                                     annotations, [], tools.TaskSupport.FORBIDDEN, None))
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
