# world: plugin-with-skills
"""stats: descriptive statistics, a wasm-mcp plugin written in Python.

Built into a component by componentize-py (see the Makefile at the
repository root, `make plugins`), with the helper layer in ../wasm_mcp.py.
It makes a skill as it is read: `stats/describing-data`, whose example is a
sample drawn at that moment.
"""

import random
import statistics
from typing import Optional

from wasm_mcp import (
    ClientError, Completion, Prompts, Resources, Skills, ToolError, Tools, ask, elicit, is_cancelled,
    lists_changed, log, progress, prompt, resource, run_as_task, sample, skill, tool,
)

__all__ = ["Tools", "Resources", "Prompts", "Completion", "Skills"]

# Progress is reported once per chunk of this many numbers.
CHUNK = 1000
# A bootstrap reports progress and checks for cancellation once per this many resamples.
RESAMPLE_STEP = 500
# From this many draws (resamples times numbers) a bootstrap says it will take a while.
LONG_BOOTSTRAP = 1_000_000


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
    return str(_percentile(sorted(numbers), p))


def _percentile(ordered: list, p: float) -> float:
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@tool(title="Bootstrap the mean", read_only=True, task_support="optional")
def bootstrap(numbers: list[float], resamples: int = 2000, seed: int = 0) -> dict:
    """A 95% confidence interval for the mean of a list of numbers, by bootstrap resampling
    (slow for many resamples: it may run as a task).

    Args:
        numbers: The sample (at least two numbers).
        resamples: How many resamples to draw: more give a steadier interval and take longer.
        seed: Seeds the draws: the same call gives the same interval.
    """
    if len(numbers) < 2:
        raise ToolError("bootstrap needs at least two numbers")
    if resamples < 1:
        raise ToolError(f"resamples must be at least 1, not {resamples}")
    if resamples * len(numbers) >= LONG_BOOTSTRAP:
        run_as_task()
    draws = random.Random(seed)
    means = []
    for start in range(0, resamples, RESAMPLE_STEP):
        if is_cancelled():
            raise ToolError(f"cancelled after {start} resamples")
        for _ in range(min(RESAMPLE_STEP, resamples - start)):
            means.append(statistics.fmean(draws.choices(numbers, k=len(numbers))))
        progress(len(means), resamples, "resampling")
    means.sort()
    return {"mean": statistics.fmean(numbers), "low": _percentile(means, 2.5), "high": _percentile(means, 97.5),
            "resamples": resamples}


@tool(read_only=True)
def refresh_stats() -> str:
    """Has the host list this plugin's tools, prompts and resources again and tell clients to fetch them."""
    lists_changed(tools=True, prompts=True, resources=True)
    return "the host lists stats again"


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
    return ("stats computes descriptive statistics (describe), percentiles (percentile) and bootstrap intervals "
            "(bootstrap) in Python.")


@prompt
def explain(numbers: str, audience: str = "a general reader") -> str:
    """Asks the model to explain the statistics of some numbers.

    Args:
        numbers: The numbers, separated by commas.
        audience: Who the explanation is for.
    """
    return f"Call the describe tool on [{numbers}] and explain the result to {audience}."


DESCRIBING_DATA = """---
name: describing-data
description: Summarise a list of numbers with the stats tools and say what stands out
---

# Describing data

1. Call `describe` with the numbers: count, mean, median, spread, range.
2. A mean far from the median means a skewed sample: say which way.
3. For how sure the mean is, call `bootstrap` (it may run as a task).

`example.md` holds a sample drawn when it was read, to try the steps on.
"""


@skill("stats/describing-data", files=lambda: ["SKILL.md", "example.md"])
def describing_data(file: str) -> Optional[str]:
    """The files of the skill: its instructions, and a sample drawn now."""
    if file == "SKILL.md":
        return DESCRIBING_DATA
    if file == "example.md":
        drawn = [round(random.gauss(50, 10), 1) for _ in range(8)]
        return f"# Example\n\nA sample of 8 numbers drawn as this file was read:\n\n{drawn}\n"
    return None
