"""Honest baselines: on every shared session, every policy but `naive` and `recorded` fits the window on
every call. Where a stand-in for a fixed prompt the recording lacks leaves no room, the replay runs at a
larger window and says so (`window_raised_from`); it never sends a request a provider would refuse."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nova.evaluation.replay import missing_prompt_split, replay_messages, replay_session
from nova.messages import Message, SummaryPart, TextPart
from nova.model import Usage
from nova.sessions.importers import read_session_file
from nova.testing import shared_data_dir
from nova.tokens import counter_for_model
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

FITTING = ("truncate", "observation-mask", "nova")
WINDOWS = (16_000, 32_000, 64_000)


def _files(root: Path) -> list[Path]:
    found = [*root.glob("sessions/**/*.json"), *root.glob("sessions/**/*.jsonl"),
             *root.glob("trajectories/**/*.traj"), *root.glob("trajectories/**/*.traj.json")]
    return sorted(p for p in found if p.is_file())


@pytest.mark.slow
def test_no_policy_but_naive_and_recorded_goes_over_the_window_on_any_shared_session() -> None:
    root = shared_data_dir()
    if not (root / "sessions").is_dir():
        pytest.skip(f"no shared session data at {root} (set NOVA_SHARED_DATA)")
    for name in ("nova.agent", "nova.context"):
        logging.getLogger(name).setLevel(logging.ERROR)
    over: list[str] = []
    replays = 0
    for path in _files(root):
        for run in read_session_file(path).runs():
            if not any(m.role == "assistant" for m in run.messages):
                continue
            counter = counter_for_model(str(run.meta.get("model") or "claude-sonnet-4-5"))
            for window in WINDOWS:
                for policy in FITTING:
                    report = replay_session(run, window=window, policy=policy, counter=counter)
                    replays += 1
                    assert report.window >= window
                    assert bool(report.window_raised_from) == (report.window > window)
                    if report.requests_over_window:
                        over.append(f"{path.name} {policy}@{window}: {report.requests_over_window} over, "
                                    f"peak {report.peak_context_tokens:,} at window {report.window:,}")
    assert replays > 100
    assert over == []


def _user(text: str) -> Message:
    return Message(role="user", parts=(TextPart(text=text),))


def _reply(text: str, context: int) -> Message:
    return Message(role="assistant", parts=(TextPart(text=text),),
                   metadata={"usage": Usage(input_tokens=context, output_tokens=5).to_dict()})


def test_an_inlined_file_is_a_message_not_part_of_the_fixed_prompt() -> None:
    """The first call read fixed prompt + an @-inlined file; after a recorded compaction the file is gone:
    the smaller gap is the fixed prompt, the rest belongs to the first user message."""
    counter = HeuristicCounter(CL100K_PROFILE)
    task = _user("@notes.md review this")
    summary = Message(role="user", parts=(SummaryPart(text="we reviewed notes.md"),))
    messages = [task, _reply("ok", 20_000 + 30_000), _user("next"), _reply("done", 20_000 + 30_100),
                summary, _reply("again", 20_000 + 40)]
    fixed, inlined = missing_prompt_split(messages, counter)
    assert 19_900 < fixed < 20_050
    assert 29_900 < inlined < 30_050
    report = replay_messages(messages, window=64_000, policy="truncate", counter=counter)
    assert 19_900 < report.placeholder_tokens < 20_050
    assert 29_900 < report.inlined_placeholder_tokens < 30_100
    # Without a compaction nothing tells the two apart: all of the gap is the fixed prompt, as before.
    fixed, inlined = missing_prompt_split(messages[:4], counter)
    assert inlined == 0 and 49_900 < fixed < 50_050

