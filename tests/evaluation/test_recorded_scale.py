"""A replay counts a view the recording never sent as the provider would have: its estimate, scaled by how
far the counter is off on the recorded view at the same call (nova.evaluation.recorded_scale)."""

from __future__ import annotations

from nova.evaluation.recorded_scale import RecordedScale
from nova.evaluation.replay import replay_messages
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.model import ToolSpec, Usage
from nova.tokens import count_message, count_system, count_tools
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

COUNTER = HeuristicCounter(CL100K_PROFILE)
SYSTEM = "You are a careful coding agent. " * 40
TOOLS = (ToolSpec(name="bash", description="run a shell command", input_schema={"type": "object"}),)


def _recording(steps: int, *, provider_over: float, lacked_prompt: int = 0, words: int = 300) -> list[Message]:
    """A task and `steps` bash calls (outputs of `words` words), each reply carrying the usage of a
    provider that counts `provider_over` times what the replay's counter says of the view it was sent.
    `lacked_prompt`: the recording lacks its fixed prompt, which the provider counted at that many tokens
    (then `provider_over` applies to the messages alone, as with Codex rollouts whose text is redacted)."""
    fixed = 0 if lacked_prompt else count_system(SYSTEM, COUNTER) + count_tools(TOOLS, COUNTER)
    messages = [Message.user("Fix the failing test in calc.py and explain the cause.", id="task")]
    for i in range(steps):
        sent = fixed + sum(count_message(m, COUNTER) for m in messages)
        usage = Usage(input_tokens=lacked_prompt + round(sent * provider_over), output_tokens=20)
        call = ToolUsePart(id=f"call{i}", name="bash", input={"command": f"cat f{i}.py"})
        messages.append(Message(role="assistant", parts=(call,), id=f"a{i}", created_at=1000.0 + i,
                                metadata={"usage": usage.to_dict()}))
        messages.append(Message(role="user", parts=(ToolResultPart(f"call{i}", f"line{i} value " * words),),
                                id=f"r{i}", created_at=1000.5 + i))
    return messages


def test_a_view_the_recording_sent_is_counted_at_its_recorded_figure() -> None:
    messages = _recording(6, provider_over=1.1)
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=200_000, policy="naive", counter=COUNTER)
    recorded = [Usage.from_dict(m.metadata["usage"]).context_tokens for m in messages if m.role == "assistant"]
    assert [c.input_tokens for c in report.per_call] == recorded
    assert all(c.input_tokens > c.counted for c in report.per_call)  # the counter alone says less


def test_a_smaller_view_is_scaled_as_the_counter_is_off_on_the_recorded_one() -> None:
    messages = _recording(10, provider_over=1.1)
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=200_000, policy="nova", counter=COUNTER,
                             compact_before=[1 + 2 * 6])
    assert report.compactions == 1
    after = report.per_call[6:]
    assert after and all(c.counted < report.per_call[5].counted for c in after)
    for call in after:
        assert abs(call.input_tokens - call.counted * 1.1) <= 1
        assert sum(call.composition.values()) == call.input_tokens


def test_a_figure_that_cannot_be_of_the_view_followed_leaves_the_estimate() -> None:
    # A caller's fixed prompt of a few tokens, where the recording sent thousands: the ratio says the replay
    # follows another request than the one counted.
    scale = RecordedScale(fixed=30, size=lambda m: 10, views_in_transcript=True)
    scale.add(Message.user("task"))
    assert scale.scaled(40, Usage(input_tokens=15_000)) == 40
    assert scale.scaled(40, Usage(input_tokens=44)) == 44
    assert scale.scaled(40, None) == 40


def test_a_nova_recording_holds_the_ratio_of_its_last_recorded_view() -> None:
    scale = RecordedScale(fixed=30, size=lambda m: 10, views_in_transcript=False)
    assert scale.scaled(500, Usage(input_tokens=9_999)) == 500  # no recorded view seen yet
    scale.recorded_view(1_000, 1_080)
    assert scale.scaled(500, Usage(input_tokens=9_999)) == 540


def test_a_compaction_floor_is_in_the_units_the_compaction_sized_its_view_in() -> None:
    # The summary states its continuity floor in the counter's units, as the compaction sized the view;
    # the provider's figure for that view (`input_tokens`) is another unit, `counted` is the same one.
    def compaction(provider_over: float) -> tuple[int, int, int]:
        report = replay_messages(_recording(14, provider_over=provider_over), system=SYSTEM, tools=TOOLS,
                                 window=8_000, policy="nova", counter=COUNTER)
        call = next(c for c in report.per_call if c.event == "compaction")
        return call.floor, call.input_tokens, call.counted

    plain = compaction(1.0)
    floor, used, counted = compaction(1.1)
    assert plain[1] == plain[2] and counted == plain[2]  # the same view either way
    assert abs(used - counted * 1.1) <= 1  # measured as that provider would have counted it
    assert floor == plain[0] > 0  # the floor does not move with the provider's unit


def test_after_the_recording_compacts_a_view_keeps_the_ratio_from_before() -> None:
    # The first call after a Claude Code compaction counts the files the agent read back in, which no
    # record holds: its ratio is of the summary's view, not of a policy's conversation.
    scale = RecordedScale(fixed=100, size=lambda m: 1_000, views_in_transcript=True)
    for _ in range(9):
        scale.add(Message.user("x"))
    assert scale.scaled(5_000, Usage(input_tokens=8_500)) == 4_670  # 8,500 real for 9,100 counted
    scale.compacted()
    scale.add(Message.user("summary"))
    assert scale.scaled(5_000, Usage(input_tokens=2_000)) == 4_670  # not 5,000 x 2,000 / 1,100


def test_a_baseline_fits_to_the_line_as_the_provider_last_counted() -> None:
    scale = RecordedScale(fixed=100, size=lambda m: 1_000, views_in_transcript=True)
    assert scale.fit_limit(28_000) == 28_000  # nothing measured yet
    for _ in range(9):
        scale.add(Message.user("x"))
    scale.scaled(5_000, Usage(input_tokens=11_375))  # the provider counts 1.25x the counter
    assert scale.fit_limit(28_000) == 22_400
    scale.scaled(5_000, Usage(input_tokens=8_190))  # and here 0.9x: the line is never loosened
    assert scale.fit_limit(28_000) == 28_000


def test_truncate_stays_under_the_window_where_the_provider_counts_more() -> None:
    # A provider that counts a third more than the replay's counter: truncate cut to its line by the
    # counter alone would send requests over the window as the provider counts them.
    messages = _recording(40, provider_over=1.33)
    for policy in ("truncate", "observation-mask"):
        report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=16_000, policy=policy,  # type: ignore[arg-type]
                                 counter=COUNTER)
        assert report.requests_over_window == 0, policy
        assert report.peak_context_tokens > 12_000 or policy != "truncate"  # it still fills its window


def test_a_fixed_prompt_stand_in_is_not_scaled_by_the_messages_ratio() -> None:
    # The stand-in is sized from the first call's usage: it is in the provider's units. Scaled by the
    # ratio of the whole view, a 6k prompt beside messages counted at 2.5x grew past an 8k window and the
    # baselines ran at a window several times the prompt.
    recording = _recording(30, provider_over=2.5, lacked_prompt=6_000, words=100)
    for policy in ("truncate", "observation-mask"):
        report = replay_messages(recording, window=8_000, policy=policy, counter=COUNTER)
        assert report.placeholder_tokens > 5_000
        assert not report.window_raised_from and report.window == 8_000, policy
        assert report.requests_over_window == 0 and report.peak_context_tokens <= 8_000


def test_the_ratio_of_a_recording_with_a_stand_in_is_of_the_rest_of_the_view() -> None:
    scale = RecordedScale(fixed=6_000, size=lambda m: 1_000, views_in_transcript=True, measured=6_000)
    for _ in range(4):
        scale.add(Message.user("x"))
    assert scale.scaled(7_000, Usage(input_tokens=6_000 + 3 * 4_000)) == 6_000 + 3 * 1_000
    assert scale.fit_limit(9_000) == 6_000 + 1_000  # what is left of the line, at the provider's 3x


def test_a_side_call_smaller_than_the_stand_in_is_still_counted_at_its_figure() -> None:
    # A harness's side call with a shorter prompt than the transcript shows (OpenCode's title call): the
    # stand-in was not sent, and the call's figure scales the whole view.
    scale = RecordedScale(fixed=9_000, size=lambda m: 300, views_in_transcript=True, measured=9_000)
    for _ in range(2):
        scale.add(Message.user("x"))
    assert scale.scaled(9_600, Usage(input_tokens=4_800)) == 4_800
