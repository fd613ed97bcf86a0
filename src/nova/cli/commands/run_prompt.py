"""What `nova run` and `nova resume` check in a prompt before any session is opened: an empty prompt is
a usage error (a model API refuses an empty message anyway, after a session was made for it), and
`/help` lists the slash commands `nova run` answers itself, without a model call."""

from __future__ import annotations

import typer

__all__ = ["SLASH_HELP", "check_prompt", "is_help", "slash_commands_line", "unknown_slash_command"]

_ANSWERED_HERE = frozenset({"/compact", "/context", "/memory", "/remember"})
_TURNS = frozenset({"/skill"})
"""Slash commands that are a model turn of their own: `/skill NAME [REQUEST]` (nova.skills.runtime)."""

SLASH_HELP = """\
Slash commands `nova run` answers itself, without a model call (give one as the prompt):
  /help                           this list
  /context                        what is in context: every segment, its tokens and why it is there
  /compact [FOCUS]                compact the conversation now, keeping FOCUS in the summary
  /memory [list|show NAME|approve NAME|forget NAME]
                                  long-term memory
  /remember [TYPE:] TEXT          save a memory (TYPE: user, feedback, project or reference)
  /skill NAME [REQUEST]           ask with a skill's instructions loaded (`nova skills list` names them);
                                  this one is a model turn
  /goal TEXT, /accept TEXT        the task's goal and its acceptance criteria
  /constraint TEXT, /confirm [N]  add a rule the agent must keep; confirm a rule it proposed
  /approve TEXT, /revoke TEXT     grant or withdraw an approval
  /open TEXT, /done TEXT, /plan A; B
                                  open items and the plan
They act on a new session, or on a recorded one with --resume: nova run --resume last "/context"."""


def slash_commands_line() -> str:
    """The short form, for an unknown command's error."""
    return ("the commands are /help, /context, /compact [FOCUS], /memory, /remember TEXT, /skill NAME and the task-state "
            "commands /goal, /accept, /constraint, /confirm, /approve, /revoke, /open, /done, /plan "
            "(`nova run /help` describes each)")


def unknown_slash_command(prompt: str) -> str | None:
    """The error for a prompt that starts with a slash command `nova run` does not know, or None.
    Checked before a session is opened, so a typo leaves nothing behind."""
    from nova.context.state import TASK_STATE_COMMANDS

    stripped = prompt.strip()
    if not stripped.startswith("/"):
        return None
    command = stripped.split(None, 1)[0]
    if command in _ANSWERED_HERE or command in _TURNS or command in TASK_STATE_COMMANDS or is_help(command):
        return None
    return f"unknown command {command!r}: {slash_commands_line()}"


def is_help(prompt: str) -> bool:
    return prompt.strip().lower() in ("/help", "/?")


def check_prompt(prompt: str) -> None:
    """Refuse an empty or blank prompt as a usage error (exit 2), before anything is created."""
    if not prompt.strip():
        raise typer.BadParameter("the prompt is empty; say what the agent should do, e.g. "
                                 "nova run \"fix the failing test\" (or `nova run /help` for the slash commands)",
                                 param_hint="'PROMPT'")
