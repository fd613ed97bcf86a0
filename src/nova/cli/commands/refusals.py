"""The tool calls a run was refused, collected from its events, for the closing line and exit status.

A run whose calls were refused did not do everything it was asked: `nova run` says which at the end
("2 tool calls were refused: bash(git push), edit_file(calc/stats.py)"), lists them in `--json`, and
exits with `EXIT_REFUSED`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nova import events as ev
from nova.cli.commands.exit_codes import EXIT_REFUSED

__all__ = ["EXIT_REFUSED", "RefusedCall", "RefusedCalls"]

_KEY_ARGUMENTS = ("command", "path", "pattern", "url")


@dataclass(frozen=True, slots=True)
class RefusedCall:
    tool_use_id: str
    tool: str
    label: str
    """`bash(git push)`, `edit_file(x.py)`: the tool and what it was called on."""
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"tool_use_id": self.tool_use_id, "tool": self.tool, "call": self.label, "reason": self.reason}


def call_label(name: str, tool_input: dict[str, Any], limit: int = 60) -> str:
    key = next((tool_input[k] for k in _KEY_ARGUMENTS if isinstance(tool_input.get(k), str)), None)
    if key is None:
        return name
    text = " ".join(key.split())
    return f"{name}({text if len(text) <= limit else text[: limit - 1] + '…'})"


class RefusedCalls:
    """An event-bus subscriber: remembers each call's input, and the calls the policy refused."""

    def __init__(self) -> None:
        self._inputs: dict[str, tuple[str, dict[str, Any]]] = {}
        self.calls: list[RefusedCall] = []

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.ToolCallStarted):
            self._inputs[event.tool_use_id] = (event.name, dict(event.input))
        elif isinstance(event, ev.PermissionDenied):
            name, tool_input = self._inputs.get(event.tool_use_id, (event.name, {}))
            self.calls.append(RefusedCall(event.tool_use_id, name, call_label(name, tool_input), event.reason))

    def summary(self) -> str | None:
        """One line for the end of the run, or None when nothing was refused."""
        if not self.calls:
            return None
        count = len(self.calls)
        noun = "tool call was" if count == 1 else "tool calls were"
        return f"{count} {noun} refused: {', '.join(c.label for c in self.calls)}"
