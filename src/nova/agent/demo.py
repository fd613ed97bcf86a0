"""The offline demo: a scripted model drives a real session with real tools over a generated repository.

`nova demo` writes a small Python project with a failing test and a large server log, then lets the
demo model (a provider like any other: `--provider demo`) explore it, read a large log, run the tests,
fix the bug and run the tests again. Every tool call is real; only the model is scripted.

For any other prompt the demo model is a tiny rule-based explorer (list files, read one, answer), so
`nova run --provider demo "…"`, the server and the TUI can be tried without credentials.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import replace
from pathlib import Path

from nova.context.cache_sim import AnthropicCache, Block, ProviderCache, volatile_tail
from nova.context.summarize import user_entries_of_summary
from nova.messages import Message, ToolResultPart, ToolUsePart, new_id, to_dict
from nova.model import ModelRequest, Usage
from nova.providers.scripted import FunctionProvider, reply
from nova.tokens import count_message, count_system, count_tools
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

__all__ = ["DEMO_ENTRIES", "DEMO_PROMPT", "demo_folder_problem", "make_demo_project", "make_demo_provider"]

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


# What `make_demo_project` writes at the top of its folder: a folder holding anything else is not the
# demo's, and writing the demo there would overwrite someone's README.md.
DEMO_ENTRIES = frozenset({"README.md", "calc", "tests", "logs"})


def demo_folder_problem(root: Path) -> str | None:
    """Why the demo project cannot be written at `root` (None: it can): a file is there, or a folder
    holding more than an earlier demo project."""
    if root.is_file() or (root.exists() and not root.is_dir()):
        return f"{root} is not a folder"
    if root.is_dir():
        others = sorted(p.name for p in root.iterdir() if p.name not in DEMO_ENTRIES)
        if others:
            shown = ", ".join(others[:3]) + (" …" if len(others) > 3 else "")
            return (f"{root} holds files that are not the demo's ({shown}), and the demo writes README.md, "
                    "calc/, tests/ and logs/ there")
    return None


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
def _is_human_prompt(message: Message) -> bool:
    """A message a person typed: not a tool result, not a summary or restore note Nova inserted."""
    return (message.role == "user" and not message.tool_results() and not message.has("summary")
            and message.origin is None)


def _turn_prompt(request: ModelRequest) -> str:
    """The request of the current turn: the newest words a person typed. After a compaction they may only
    survive in the summary's user section (the session's opening message, kept ahead of it, is older)."""
    for message in reversed(request.messages):
        if _is_human_prompt(message):
            return message.text
        if message.has("summary") and (entries := user_entries_of_summary(message.text)):
            return entries[-1][1]
    return DEMO_PROMPT if any(DEMO_PROMPT in m.text for m in request.messages) else ""


def _results_since_prompt(request: ModelRequest) -> list[ToolResultPart]:
    results: list[ToolResultPart] = []
    for message in reversed(request.messages):
        if _is_human_prompt(message):
            break
        results[:0] = message.tool_results()
    return results


# Stands for the path of the copy Nova saved when the whole log was too large to show (a spill file):
# the demo model reads it back in parts, as the placeholder tells a model to.
SAVED_LOG = "<the saved copy of logs/server.log>"
_SAVED_PATH = re.compile(r"Full output saved to: (\S+)")

# Every scripted call is distinct, so the last call in view says which step comes next.
_SCRIPT: list[tuple[str, str, dict[str, str | int]]] = [
    ("I'll start by looking at the project layout.", "glob", {"pattern": "**/*.py"}),
    ("Let me run the test suite to see the failure.", "bash", {"command": "python -m unittest -v 2>&1"}),
    ("`test_mean` fails. Let me read the implementation.", "read_file", {"path": "calc/stats.py"}),
    ("The task mentions the server log; it is large, so I'll read it whole once.", "read_file",
     {"path": "logs/server.log"}),
    ("Searching the log for the error line.", "grep", {"pattern": "ERROR", "path": "logs"}),
    ("The log was saved whole; reading the saved copy in parts, from well before the error.", "read_file",
     {"path": SAVED_LOG, "offset": 600, "limit": 160}),
    ("Still fine there; the next part.", "read_file", {"path": SAVED_LOG, "offset": 760, "limit": 160}),
    ("The part with the error.", "read_file", {"path": SAVED_LOG, "offset": 920, "limit": 160}),
    ("And the jobs after it, to see whether it recurs.", "read_file", {"path": SAVED_LOG, "offset": 1080, "limit": 160}),
    ("The rest of the log.", "read_file", {"path": SAVED_LOG, "offset": 1240, "limit": 170}),
    ("`mean()` divides by `len(values) - 1`; it should divide by `len(values)`. Fixing it.", "edit_file",
     {"path": "calc/stats.py", "old_text": "sum(values) / (len(values) - 1)", "new_text": "sum(values) / len(values)"}),
    ("Running the tests again.", "bash", {"command": "python -m unittest -v tests.test_stats 2>&1"}),
]


def _same_call(script: dict[str, str | int], given: dict[str, object]) -> bool:
    if script.get("path") == SAVED_LOG:
        return {k: v for k, v in script.items() if k != "path"} == {k: v for k, v in given.items() if k != "path"}
    return script == given


def _saved_log_path(request: ModelRequest) -> str:
    """The spill file of the whole-log read, named in its placeholder; the log itself when it was not
    saved (a small log, or no session directory)."""
    whole_log = {u.id for m in request.messages for u in m.tool_uses()
                 if u.name == "read_file" and dict(u.input) == {"path": "logs/server.log"}}
    for message in request.messages:
        for result in message.tool_results():
            found = _SAVED_PATH.search(result.content) if result.tool_use_id in whole_log else None
            if found:
                return found.group(1)
    return "logs/server.log"


def _turn_messages(request: ModelRequest) -> list[Message]:
    """The messages of the current turn: from the person's latest request on (the demo's task may follow
    another request in the same conversation), or the whole view when a compaction folded the request
    into its summary."""
    for index in range(len(request.messages) - 1, -1, -1):
        if _is_human_prompt(request.messages[index]):
            return list(request.messages[index:])
    return list(request.messages)


def _scenario_step(request: ModelRequest) -> int:
    """Which scripted step comes next: one past the step whose call is the last one in view. Read from
    the view, not counted, so it survives compaction (which keeps the latest calls verbatim)."""
    calls = [u for m in _turn_messages(request) if m.role == "assistant" for u in m.tool_uses()]
    if not calls:
        return 0
    last = calls[-1]
    for index, (_, name, args) in enumerate(_SCRIPT):
        if name == last.name and _same_call(args, dict(last.input)):
            return index + 1
    return len(_SCRIPT)


def _scenario(request: ModelRequest) -> reply:
    step = _scenario_step(request)
    if step < len(_SCRIPT):
        text, name, args = _SCRIPT[step]
        given = dict(args)
        if given.get("path") == SAVED_LOG:
            given["path"] = _saved_log_path(request)
        return reply(text, [_demo_call(name, **given)])
    return reply(_scenario_report(request))


def _result_of(request: ModelRequest, name: str) -> ToolResultPart | None:
    """The result of the latest `name` call in view."""
    ids = [u.id for m in request.messages if m.role == "assistant" for u in m.tool_uses() if u.name == name]
    if not ids:
        return None
    found = [r for m in request.messages for r in m.tool_results() if r.tool_use_id == ids[-1]]
    return found[-1] if found else None


def _refused(result: ToolResultPart) -> bool:
    return result.is_error and result.content.startswith("Permission denied")


def _scenario_report(request: ModelRequest) -> str:
    """The closing answer, from what the tool results say: a refused edit or test run is reported as
    refused, never as done."""
    edit, tests = _result_of(request, "edit_file"), _result_of(request, "bash")
    if tests is None:
        verdict = "The test run is no longer in my context; run the tests to check."
    elif _refused(tests):
        verdict = "I could not run the tests: running them was refused."
    elif "OK" in tests.content:
        verdict = "All tests pass now."
    else:
        verdict = "The tests still fail; see the output above."
    cause = ("Root cause: `calc.stats.mean` divided by `len(values) - 1` (a sample-variance denominator) "
             "instead of `len(values)`, which the ERROR line in `logs/server.log` shows as inflated nightly "
             "averages.")
    if edit is None:
        change = "My edit to `calc/stats.py` is no longer in my context; check the file to confirm it."
    elif not edit.is_error:
        change = "I changed the denominator in `calc/stats.py`."
    elif edit is not None and _refused(edit):
        change = ("I changed nothing: my edit to `calc/stats.py` was refused. The fix is to divide by "
                  "`len(values)`; approve the edit (or run with `--allow edit_file`) and ask again.")
    else:
        first = edit.content.strip().splitlines()[0] if edit.content.strip() else "no output"
        change = f"I changed nothing: my edit to `calc/stats.py` failed ({first})."
    return f"{verdict}\n\n{cause} {change}"


def _demo_call(name: str, **arguments: object) -> ToolUsePart:
    """A tool call with an id unique across processes. `call()` numbers calls per process, so a resumed
    demo session would repeat the ids its first process used (and resume would have to rename them)."""
    return ToolUsePart(id=new_id("toolu"), name=name, input=arguments)


def _explorer(step: int, results: list[ToolResultPart]) -> reply:
    if step == 0:
        return reply("Let me see which files are here.", [_demo_call("glob", pattern="**/*")])
    if step == 1:
        listing = results[-1].content if results else ""
        candidates = [line.strip() for line in listing.splitlines() if re.search(r"\.(md|py|txt|toml)$", line)]
        if candidates:
            return reply(f"Reading {candidates[0]}.", [_demo_call("read_file", path=candidates[0], limit=60)])
    files = results[0].content.count("\n") + 1 if results and not results[0].is_error else 0
    return reply(
        "I'm the offline demo model, so I can only explore: I listed "
        f"{files} path(s) and read the first text file. For real work, give Nova a model: "
        "`export ANTHROPIC_API_KEY=...` (or `OPENAI_API_KEY` with `--provider openai`, or a local server "
        "with `--provider compatible --base-url http://localhost:11434/v1`); `nova config show` lists "
        "each provider, whether its key is set, and how to set it."
    )


def _demo_answer(request: ModelRequest, cache: ProviderCache) -> reply:
    if _turn_prompt(request).strip() == DEMO_PROMPT:
        answer = _scenario(request)
    else:
        results = _results_since_prompt(request)
        answer = _explorer(len(results), results)
    return replace(answer, usage=_demo_usage(request, answer, cache))


def _digest(value: object) -> bytes:
    return hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=16).digest()


def _demo_usage(request: ModelRequest, answer: reply, cache: ProviderCache) -> Usage:
    """What a real provider with Anthropic-style prompt caching would report for this request: sizes
    counted with Nova's own heuristic (so real and estimated figures agree as a real provider's roughly
    do), cache reads and writes from the same cache simulation `nova replay --provider-cache` uses."""
    counter = HeuristicCounter(CL100K_PROFILE)
    head = [Block(_digest([[t.name, t.description, t.input_schema] for t in request.tools]),
                  count_tools(request.tools, counter)),
            Block(_digest(request.system), count_system(request.system, counter))]
    body = [Block(_digest(to_dict(m)["parts"]), count_message(m, counter), max(1, len(m.parts)))
            for m in request.messages]
    usage = cache.call([*head, *body], head=len(head), at=None, tail=volatile_tail(request.messages))
    return replace(usage, output_tokens=max(1, counter.count(answer.text) + 20 * len(answer.tool_calls)))


def make_demo_provider() -> FunctionProvider:
    cache = AnthropicCache(min_tokens=1024)  # one prompt cache per demo model, as a provider keeps one
    provider = FunctionProvider(lambda request: _demo_answer(request, cache), chunk=24)
    provider.name = "demo"
    return provider

