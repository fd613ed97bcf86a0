"""One scripted run for every framework: what the fake model does at each step, and the tool it calls.

300 model calls over six user turns. Each call but the last of a turn asks for `fetch(n)`, whose output
sizes add up to five times the window (a few of them far over the spill limit, each holding a marker line
past its preview); the call after a spilled output reads it back through `read_saved_output`, with the
path the placeholder gives. A request that ends with Nova's summary instruction is answered with a
summary, as a model would. Each framework's test drives its own agent with its own fake model class
through `Workload.next_action`, and checks every request it receives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nova.tokens import TokenCounter, counter_for_model

SUMMARY_MARK = "Your context window is being compacted"
_SAVED = re.compile(r"Full output saved to: (\S+)")


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, object]


@dataclass(frozen=True)
class Answer:
    text: str


@dataclass
class Workload:
    window: int = 16_000
    steps: int = 300
    turns: int = 6
    big_every: int = 37
    """Every this many steps the output is far over the spill limit."""
    counter: TokenCounter = field(default_factory=lambda: counter_for_model("gpt-4o"))
    """How the fake model's provider counts what it is sent: a real tokenizer (o200k, offline), not Nova's
    estimate, so "under the window" is a provider's figure."""
    step: int = 0
    """Model calls answered so far (summary calls not counted)."""
    read_backs: list[str] = field(default_factory=list)
    """The paths the model asked to read back."""
    pending_read: str | None = None

    @property
    def per_turn(self) -> int:
        return self.steps // self.turns

    def prompts(self) -> list[str]:
        return [f"Turn {t + 1}: go through the build logs of service-{t + 1}; keep port 80{t + 1} closed "
                f"and report each failing test id (request {t + 1} of {self.turns})." for t in range(self.turns)]

    def size(self, n: int) -> int:
        """Characters of `fetch(n)`: the total over the run is five times the window in tokens."""
        if n % self.big_every == 5:
            return 24_000
        return 780 + (n * 37) % 400

    def output(self, n: int) -> str:
        size = self.size(n)
        head = f"log chunk {n}: " + " ".join(f"line {i} build step ok id-{n}-{i}" for i in range(size // 30))
        head = head[: size // 2]
        marker = f"\nMARKER-{n}: the failing test is test_case_{n}\n"
        tail = " ".join(f"tail {i} of chunk {n}" for i in range(size // 18))
        return (head + marker + tail)[:size] if size < 4000 else head + marker + tail[: size - len(head)]

    def total_output_tokens(self) -> int:
        calls = [s for s in range(self.steps) if s % self.per_turn != self.per_turn - 1]
        return sum(self.counter.count(self.output(s)) for s in calls)

    def next_action(self, last_tool_output: str | None) -> Call | Answer:
        """What the model does at this step, given the output of the tool it called last."""
        step = self.step
        self.step += 1
        if last_tool_output is not None and "<persisted-output>" in last_tool_output:
            match = _SAVED.search(last_tool_output)
            if match is not None and self.pending_read is None:
                self.pending_read = match.group(1)
        if step % self.per_turn == self.per_turn - 1:
            return Answer(f"Turn {step // self.per_turn + 1} done: {step} steps so far.")
        if self.pending_read is not None:
            path, self.pending_read = self.pending_read, None
            self.read_backs.append(path)
            return Call("read_saved_output", {"path": path, "offset": 1, "limit": 400})
        return Call("fetch", {"n": step})

    @staticmethod
    def summary() -> str:
        return ("## Request and intent\nGo through the build logs and report failing tests.\n"
                "## Current state\nSeveral chunks read; the failing test ids are in the chunks' MARKER lines.\n"
                "## Next step\nRead the next chunk.")
