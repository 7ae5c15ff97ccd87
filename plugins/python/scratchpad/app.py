# world: stateful-plugin
"""scratchpad: a conversation's scratchpad, a wasm-mcp plugin in Python that
keeps state in buckets its manifest grants (scratchpad.toml), through the
`Bucket` helper of ../wasm_mcp.py over wasi:keyvalue.
"""

from wasm_mcp import Bucket, Completion, Prompts, Resources, StateError, ToolError, Tools, tool

__all__ = ["Tools", "Resources", "Prompts", "Completion"]


@tool
def jot(key: str, text: str) -> str:
    """Writes a line on the scratchpad page `key` (appended by compare-and-swap).

    Args:
        key: The page.
        text: The line to add.
    """
    page = Bucket("pages").update(key, lambda now: (now + b"\n" if now else b"") + text.encode())
    lines = page.count(b"\n") + 1
    return f"{key} has {lines} line(s)"


@tool(read_only=True)
def read(key: str) -> str:
    """Reads the scratchpad page `key`.

    Args:
        key: The page.
    """
    text = Bucket("pages").get_text(key)
    if text is None:
        raise ToolError(f"no page {key!r}")
    return text


@tool
def tally(name: str) -> dict:
    """Adds one to the counter `name` and returns it.

    Args:
        name: The counter.
    """
    return {"name": name, "value": Bucket("pages").increment(f"tally:{name}")}


@tool(read_only=True)
def peek(bucket: str) -> str:
    """Lists the keys of a bucket (one the manifest may not grant).

    Args:
        bucket: The bucket.
    """
    try:
        return ", ".join(sorted(Bucket(bucket).keys()))
    except StateError as refused:
        raise ToolError(str(refused)) from None
