"""The offline demo: a scripted model drives a real session with real tools over a generated repository.

`nova demo` writes a small Python project with a failing test and a large server log, then lets the
demo model (a provider like any other: `--provider demo`) explore it, read a large log, run the tests,
fix the bug and run the tests again. Every tool call is real; only the model is scripted.

For any other prompt the demo model is a tiny rule-based explorer (list files, read one, answer), so
`nova run --provider demo "…"`, the server and the TUI can be tried without credentials.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from nova.messages import ToolResultPart
from nova.providers.base import ModelRequest
from nova.testing import FunctionProvider, call, reply

__all__ = ["DEMO_PROMPT", "make_demo_project", "make_demo_provider"]

DEMO_PROMPT = "The test suite of this project fails. Find out why and fix it; check the server log too."

_STATS = '''\
"""Small statistics helpers used by the report generator."""


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / (len(values) - 1)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
'''

_TESTS = '''\
import unittest

from calc.stats import mean, median


class StatsTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([2, 4, 6]), 4)

    def test_median(self):
        self.assertEqual(median([3, 1, 2]), 2)


if __name__ == "__main__":
    unittest.main()
'''


def make_demo_project(root: Path, *, log_lines: int = 1400, seed: int = 7) -> Path:
    """Write the demo repository under `root` and return it. The log is large on purpose (~100 KB):
    it is the kind of tool output that context budgeting exists for."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc").mkdir(exist_ok=True)
    (root / "tests").mkdir(exist_ok=True)
    (root / "logs").mkdir(exist_ok=True)
    (root / "calc" / "__init__.py").write_text("", encoding="utf-8")
    (root / "calc" / "stats.py").write_text(_STATS, encoding="utf-8")
    (root / "tests" / "__init__.py").write_text("", encoding="utf-8")
    (root / "tests" / "test_stats.py").write_text(_TESTS, encoding="utf-8")
    (root / "README.md").write_text(
        "# calc\n\nStatistics helpers for the nightly report. Run the tests with "
        "`python -m unittest`.\n",
        encoding="utf-8",
    )
    rng = random.Random(seed)
    lines = []
    for i in range(log_lines):
        level = "INFO" if rng.random() > 0.03 else "WARN"
        latency = rng.randint(3, 900)
        lines.append(f"2026-11-28T03:{i // 60 % 60:02d}:{i % 60:02d}Z {level} report.worker job={i} "
                     f"latency_ms={latency} rows={rng.randint(10, 5000)} status=ok")
    lines.insert(log_lines * 2 // 3, "2026-11-28T03:41:07Z ERROR report.worker job=933 mean() returned 6.0 "
                 "for [2, 4, 6]; nightly averages are inflated")
    (root / "logs" / "server.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


# -- the demo model ----------------------------------------------------------------------------------
def _turn_steps(request: ModelRequest) -> tuple[str, list[ToolResultPart]]:
    """The prompt of the current user turn and the tool results received since it."""
    prompt = ""
    results: list[ToolResultPart] = []
    for message in reversed(request.messages):
        if message.role == "user" and not message.tool_results():
            prompt = message.text
            break
        if message.role == "user":
            results[:0] = message.tool_results()
    return prompt, results


def _scenario(step: int, results: list[ToolResultPart]) -> reply:
    last = results[-1].content if results else ""
    script = [
        lambda: reply("I'll start by looking at the project layout.", [call("glob", pattern="**/*.py")]),
        lambda: reply("Let me run the test suite to see the failure.",
                      [call("bash", command="python -m unittest -v 2>&1")]),
        lambda: reply("`test_mean` fails. Let me read the implementation.", [call("read_file", path="calc/stats.py")]),
        lambda: reply("The task mentions the server log; it is large, so I'll read it whole once.",
                      [call("read_file", path="logs/server.log")]),
        lambda: reply("The log confirms inflated averages. Searching for the error line.",
                      [call("grep", pattern="ERROR", path="logs")]),
        lambda: reply(
            "`mean()` divides by `len(values) - 1`; it should divide by `len(values)`. Fixing it.",
            [call("edit_file", path="calc/stats.py", old_text="sum(values) / (len(values) - 1)",
                  new_text="sum(values) / len(values)")],
        ),
        lambda: reply("Running the tests again.", [call("bash", command="python -m unittest -v 2>&1")]),
    ]
    if step < len(script):
        return script[step]()
    passed = "OK" in last
    verdict = "All tests pass now." if passed else "The tests still fail; see the output above."
    return reply(
        f"{verdict}\n\nRoot cause: `calc.stats.mean` divided by `len(values) - 1` (a sample-variance "
        "denominator) instead of `len(values)`, which the ERROR line in `logs/server.log` shows as "
        "inflated nightly averages. I changed the denominator in `calc/stats.py`."
    )


def _explorer(step: int, results: list[ToolResultPart]) -> reply:
    if step == 0:
        return reply("Let me see which files are here.", [call("glob", pattern="**/*")])
    if step == 1:
        listing = results[-1].content if results else ""
        candidates = [line.strip() for line in listing.splitlines() if re.search(r"\.(md|py|txt|toml)$", line)]
        if candidates:
            return reply(f"Reading {candidates[0]}.", [call("read_file", path=candidates[0], limit=60)])
    files = results[0].content.count("\n") + 1 if results and not results[0].is_error else 0
    return reply(
        "I'm the offline demo model, so I can only explore: I listed "
        f"{files} path(s) and read the first text file. Configure a real provider "
        "(`nova config show` says how) for real work."
    )


def _demo_answer(request: ModelRequest) -> reply:
    prompt, results = _turn_steps(request)
    step = len(results)
    if prompt.strip() == DEMO_PROMPT:
        return _scenario(step, results)
    return _explorer(step, results)


def make_demo_provider() -> FunctionProvider:
    provider = FunctionProvider(_demo_answer, chunk=24)
    provider.name = "demo"
    return provider

