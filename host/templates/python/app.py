"""{{name}}: a wasm-mcp plugin in Python, built into a component by componentize-py.

Type hints become each tool's input schema and the docstring its description
(see wasm_mcp.py). Tool and prompt names
start with the plugin's name, so they never collide with another plugin's. `make build` builds dist/{{name}}.wasm; `make test` tests the logic.
"""

from wasm_mcp import Completion, Prompts, Resources, Tools, log, prompt, resource, tool

__all__ = ["Tools", "Resources", "Prompts", "Completion"]


@tool(read_only=True)
def {{crate}}_shout(text: str, times: int = 1) -> str:
    """Upper-cases text, repeated as often as asked.

    Args:
        text: The text to shout.
        times: How many times to repeat it.
    """
    log(f"shouting {len(text)} characters {times} times")
    return " ".join([text.upper()] * times)


@resource("{{name}}://about", name="about")
def about() -> str:
    """What this plugin does."""
    return "{{name}} shouts."


@prompt
def {{crate}}_cheer(team: str) -> str:
    """Asks the model for a cheer.

    Args:
        team: Who to cheer for.
    """
    return f"Write a short cheer for {team}, then shout it with the {{crate}}_shout tool."
