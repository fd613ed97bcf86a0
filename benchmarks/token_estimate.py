"""How well does the token ledger predict what a provider reports? (TOK-1)

For every recorded assistant call n > 1 of the real trajectories in ../shared/data, predict its real
`prompt_tokens` from call n-1's real usage plus an estimate of the messages added since, and compare:

  fixed35   3.5 characters per token over the whole history (no anchor)
  anchor35  call n-1's prompt + completion tokens, plus 3.5 characters per token for what was added
  nova      nova.tokens: the ledger's anchor (reasoning not replayed is left out) plus the counter that
            `counter_for_model` picks for the run's model, with its per-message overhead

Errors are absolute, in percent of the real figure. The Gemini profile's weights were fitted on these
same runs' consecutive-call growth (fitted on half the runs, the other half scored median 0.031 %,
p95 0.92 %, max 4.9 %). Most of what remains is the gateway switching between two Google backends whose
counts differ by about 1 % of the context; no estimate made before the call can know which one answers. Last line: one JSON object with the figures.
Run: python benchmarks/token_estimate.py  (NOVA_SHARED_DATA points elsewhere)
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.messages import Message, Role, TextPart
from nova.providers.base import Usage
from nova.testing import shared_data_dir
from nova.tokens import TokenCounter, TokenLedger, counter_for_model

METHODS = ("fixed35", "anchor35", "nova")


@dataclass(frozen=True)
class Call:
    """One recorded call: the messages it was sent and its real usage."""

    sent: list[dict[str, Any]]
    reply: dict[str, Any]
    usage: dict[str, Any]


def _calls(messages: list[dict[str, Any]]) -> Iterator[Call]:
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        usage = ((message.get("extra") or {}).get("response") or {}).get("usage")
        if usage and usage.get("prompt_tokens"):
            yield Call(messages[:index], message, usage)


def _usage(raw: dict[str, Any]) -> Usage:
    """OpenAI-shaped usage normalized as a provider adapter would (CCH-4)."""
    return Usage.from_dict(raw)


def _to_message(raw: dict[str, Any], message_id: str) -> Message:
    # mini-swe-agent sends plain chat messages (observations are user text), so that is what Nova counts.
    role: Role = "user"
    if raw["role"] == "system":
        role = "system"
    elif raw["role"] == "assistant":
        role = "assistant"
    content = raw["content"] if isinstance(raw["content"], str) else json.dumps(raw["content"])
    return Message(role=role, parts=(TextPart(content),), id=message_id)


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(m["content"]) if isinstance(m["content"], str) else len(json.dumps(m["content"])) for m in messages)


def evaluate_run(messages: list[dict[str, Any]], model: str) -> dict[str, list[float]]:
    counter: TokenCounter = counter_for_model(model)
    ledger = TokenLedger(counter)
    history = [_to_message(m, f"m{i}") for i, m in enumerate(messages)]
    errors: dict[str, list[float]] = {name: [] for name in METHODS}
    previous: Call | None = None
    for call in _calls(messages):
        n_sent = len(call.sent)
        real = call.usage["prompt_tokens"]
        if previous is not None:
            n_prev = len(previous.sent)
            prev_total = previous.usage["prompt_tokens"] + (previous.usage.get("completion_tokens") or 0)
            added = call.sent[n_prev + 1 :]  # everything after call n-1's reply
            predictions = {
                "fixed35": _chars(call.sent) / 3.5,
                "anchor35": prev_total + _chars(added) / 3.5,
                "nova": ledger.estimate(history[:n_sent]),
            }
            for name, predicted in predictions.items():
                errors[name].append(abs(predicted - real) * 100.0 / real)
        # The reply enters history now: the ledger anchors on it (TOK-2). Only the anchor's usage is
        # read here, never the usage of the call being predicted.
        ledger.record(history[n_sent].id, _usage(call.usage))
        previous = call
    return errors


def _load(path: Path) -> tuple[list[dict[str, Any]], str] | None:
    data = json.loads(path.read_text())
    if "messages" in data:  # mini-swe-agent-1
        messages = data["messages"]
        model = ""
        for m in messages:
            response = (m.get("extra") or {}).get("response") or {}
            model = model or response.get("model", "")
        return messages, model
    return None


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100.0 * (len(ordered) - 1))))
    return ordered[rank]


def main() -> int:
    root = shared_data_dir() / "trajectories"
    mini = root / "mini-swe-agent-gemini3"
    if not mini.is_dir():
        print(f"token_estimate: trajectory data not found at {mini} (set NOVA_SHARED_DATA)", file=sys.stderr)
        return 2
    all_errors: dict[str, list[float]] = {name: [] for name in METHODS}
    runs = 0
    for path in sorted(mini.glob("*.traj.json")):
        loaded = _load(path)
        if loaded is None:
            print(f"skip {path.name}: not the mini-swe-agent-1 format")
            continue
        runs += 1
        for name, values in evaluate_run(*loaded).items():
            all_errors[name].extend(values)
    demos = root / "swe-agent-demos"
    for path in sorted(demos.glob("*.traj")) if demos.is_dir() else []:
        text = path.read_text()
        if '"prompt_tokens"' not in text and '"usage"' not in text:
            print(f"skip {demos.name}/{path.name}: no per-call usage recorded (nothing to predict)")
    calls = len(all_errors["nova"])
    if calls == 0:
        print(f"token_estimate: no calls with usage found under {mini}", file=sys.stderr)
        return 2
    print(f"\n{runs} runs, {calls} predicted calls (every call after the first of each run)\n")
    print(f"{'method':<10}{'median %':>10}{'p95 %':>10}{'max %':>10}")
    summary: dict[str, float | int] = {"calls": calls}
    for name in METHODS:
        values = all_errors[name]
        median, p95, worst = statistics.median(values), _percentile(values, 95), max(values)
        print(f"{name:<10}{median:>10.3f}{p95:>10.3f}{worst:>10.2f}")
        summary |= {
            f"{name}_median_pct": round(median, 4),
            f"{name}_p95_pct": round(p95, 4),
            f"{name}_max_pct": round(worst, 4),
        }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
