"""stats: descriptive statistics, a wasm-mcp plugin written in Python.

Built into a component by componentize-py (see the Makefile at the
repository root, `make plugins`), with the helper layer in ../wasm_mcp.py.
"""

import statistics

from wasm_mcp import Completion, Prompts, Resources, ToolError, Tools, log, progress, prompt, resource, tool

__all__ = ["Tools", "Resources", "Prompts", "Completion"]

# Progress is reported once per chunk of this many numbers.
CHUNK = 1000


@tool(title="Describe numbers", read_only=True)
def describe(numbers: list[float]) -> dict:
    """Count, mean, median, standard deviation, minimum and maximum of a list of numbers.

    Args:
        numbers: The sample (at least one number).
    """
    if not numbers:
        raise ToolError("describe needs at least one number")
    log(f"describing {len(numbers)} numbers")
    total = 0.0
    for start in range(0, len(numbers), CHUNK):
        total += sum(numbers[start:start + CHUNK])
        progress(min(start + CHUNK, len(numbers)), len(numbers), "summing")
    return {
        "count": len(numbers),
        "mean": total / len(numbers),
        "median": statistics.median(numbers),
        "stdev": statistics.stdev(numbers) if len(numbers) > 1 else 0.0,
        "min": min(numbers),
        "max": max(numbers),
    }


@tool(read_only=True)
def percentile(numbers: list[float], p: float) -> str:
    """The p-th percentile of a list of numbers (linear interpolation).

    Args:
        numbers: The sample (at least one number).
        p: The percentile, from 0 to 100.
    """
    if not numbers:
        raise ToolError("percentile needs at least one number")
    if not 0 <= p <= 100:
        raise ToolError(f"p must be between 0 and 100, not {p}")
    ordered = sorted(numbers)
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return str(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


@resource("stats://about", name="about")
def about() -> str:
    """What this plugin computes."""
    return "stats computes descriptive statistics (describe) and percentiles (percentile) in Python."


@prompt
def explain(numbers: str, audience: str = "a general reader") -> str:
    """Asks the model to explain the statistics of some numbers.

    Args:
        numbers: The numbers, separated by commas.
        audience: Who the explanation is for.
    """
    return f"Call the describe tool on [{numbers}] and explain the result to {audience}."
