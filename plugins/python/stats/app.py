"""stats: descriptive statistics, a wasm-mcp plugin written in Python.

Built into a component by componentize-py (see the Makefile at the
repository root, `make plugins`), with the helper layer in ../wasm_mcp.py.
"""

import statistics

from wasm_mcp import (
    ClientError, Completion, Prompts, Resources, ToolError, Tools, ask, elicit, log, progress, prompt, resource, sample,
    tool,
)

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


@tool(title="Explain numbers", read_only=True)
def explain_numbers(numbers: list[float]) -> dict:
    """Describes a list of numbers and has the client's model explain them to a reader the user names.

    Args:
        numbers: The sample (at least two numbers).
    """
    if len(numbers) < 2:
        raise ToolError("explain_numbers needs at least two numbers")
    mean, stdev = statistics.mean(numbers), statistics.stdev(numbers)
    # Both questions go out in one round; ask first, then act.
    answers = ask({
        "audience": elicit("Who is the explanation for?",
                           {"type": "object", "properties": {"audience": {"type": "string"}}, "required": ["audience"]}),
        "explanation": sample(f"In one sentence: what do a mean of {mean:g} and a standard deviation of {stdev:g} "
                              f"say about {len(numbers)} measurements?", max_tokens=100),
    })
    for key, answer in answers.items():
        if isinstance(answer, ClientError):
            raise ToolError(f"the client did not answer {key}: {answer}")
    audience = answers["audience"]
    if audience.action != "accept":
        raise ToolError(f"the user chose to {audience.action} the question")
    return {"mean": mean, "stdev": stdev, "audience": audience.content["audience"],
            "explanation": answers["explanation"]}


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
