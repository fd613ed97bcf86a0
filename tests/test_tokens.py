"""nova.tokens: counters against exact tiktoken counts, offline loading, the anchor rules (TOK-1..3)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.model import ToolSpec, Usage
from nova.testing import shared_data_dir
from nova.tokens import (
    CL100K_PROFILE,
    O200K_PROFILE,
    Anchor,
    CharRatioCounter,
    HeuristicCounter,
    ScaledCounter,
    TiktokenCounter,
    TokenLedger,
    context_percent,
    count_message,
    counter_for_model,
    estimate_context_tokens,
)

PROSE = (
    "The ledger takes the provider's reported input tokens of the latest call and adds an estimate for "
    "everything that was appended after it. That keeps the figure honest even when the system prompt, the "
    "tool schemas and the cached prefix are large, because those are already inside the real number. "
    "When a compaction succeeds the anchor is cleared until the next real figure arrives from a provider."
) * 3
CODE = '''
def find_split_point(messages, keep_tokens, counter):
    """Walk back from the end until the kept part reaches the budget."""
    total = 0
    for index in range(len(messages) - 1, -1, -1):
        total += counter.count(messages[index].text)
        if total >= keep_tokens and not messages[index].has("tool_result"):
            return index
    return 0
''' * 4
JSON_TEXT = json.dumps(
    [{"id": f"toolu_{i:04d}", "name": "read_file", "input": {"path": f"src/nova/m{i}.py", "start": i * 10}}
     for i in range(30)]
)
CJK = "上下文压缩分为两层：第一层裁剪旧的工具输出，第二层用模型生成结构化摘要。令牌估算必须区分中文和英文。" * 5


@pytest.fixture(scope="module")
def cl100k() -> TiktokenCounter:
    return TiktokenCounter("cl100k_base")


@pytest.mark.parametrize(("text", "tolerance"), [(PROSE, 0.15), (CODE, 0.2), (JSON_TEXT, 0.25), (CJK, 0.15)])
def test_heuristic_follows_cl100k(cl100k: TiktokenCounter, text: str, tolerance: float) -> None:
    exact = cl100k.count(text)
    estimate = HeuristicCounter(CL100K_PROFILE).count(text)
    assert abs(estimate - exact) <= tolerance * exact, (estimate, exact)


def test_heuristic_beats_one_ratio_on_mixed_text(cl100k: TiktokenCounter) -> None:
    texts = [PROSE, CODE, JSON_TEXT, CJK]
    heuristic = HeuristicCounter(CL100K_PROFILE)
    ratio = CharRatioCounter(3.5)
    h_err = sum(abs(heuristic.count(t) - cl100k.count(t)) for t in texts)
    r_err = sum(abs(ratio.count(t) - cl100k.count(t)) for t in texts)
    assert h_err < r_err / 2


def test_cjk_is_much_denser_than_latin() -> None:
    counter = HeuristicCounter(CL100K_PROFILE)
    assert counter.count(CJK) / len(CJK) > 2 * counter.count(PROSE) / len(PROSE)


def test_o200k_profile_tracks_o200k_on_cjk() -> None:
    exact = TiktokenCounter("o200k_base").count(CJK)
    assert abs(HeuristicCounter(O200K_PROFILE).count(CJK) - exact) <= 0.15 * exact


def test_heuristic_on_real_trajectory_text(cl100k: TiktokenCounter) -> None:
    directory = shared_data_dir() / "trajectories" / "mini-swe-agent-gemini3"
    if not directory.is_dir():
        pytest.skip(f"shared data absent: {directory}")
    path = sorted(directory.glob("*.traj.json"))[0]
    text = "".join(m["content"] for m in json.loads(path.read_text())["messages"])
    exact = cl100k.count(text)
    # 20-line samples are within 6 % on average; a whole run's mix stays within 8 %
    assert abs(HeuristicCounter(CL100K_PROFILE).count(text) - exact) <= 0.08 * exact


def test_tiktoken_is_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # conftest already refuses non-loopback connects; also refuse name resolution outright.
    def no_dns(*args: object, **kwargs: object) -> object:
        raise AssertionError("tried to resolve a host name")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    # A fresh cache dir: the encoding is seeded from the bundled file and built here, not reused.
    counter = TiktokenCounter("cl100k_base", cache_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 1  # tiktoken's cache layout: one un-gzipped blob
    assert counter.count("hello world") == 2
    assert counter.count("<|endoftext|>") > 1  # special-token text is ordinary content
    assert TiktokenCounter("o200k_base", cache_dir=tmp_path).count("hello world") == 2


def test_counter_for_model() -> None:
    assert isinstance(counter_for_model("gpt-4o-mini"), TiktokenCounter)
    assert counter_for_model("gpt-4o").name == "o200k_base"  # type: ignore[attr-defined]
    assert counter_for_model("gpt-4-turbo").name == "cl100k_base"  # type: ignore[attr-defined]
    assert isinstance(counter_for_model("google/gemini-3-pro-preview"), HeuristicCounter)
    claude = counter_for_model("claude-sonnet-4-5")  # exact cl100k, scaled: Claude has no offline tokenizer
    assert isinstance(claude, ScaledCounter) and isinstance(claude.base, TiktokenCounter)
    assert isinstance(counter_for_model("claude-sonnet-4-5", exact=False), HeuristicCounter)
    assert isinstance(counter_for_model("gpt-4o", exact=False), HeuristicCounter)
    # A gateway's alias of a GPT model counts with that model's tokenizer; a short family name inside
    # another word does not.
    assert counter_for_model("aide-gpt-5").name == "o200k_base"  # type: ignore[attr-defined]
    assert counter_for_model("openai.gpt-5.4").name == "o200k_base"  # type: ignore[attr-defined]
    assert not isinstance(counter_for_model("my-o1-thing"), TiktokenCounter)


def test_message_overheads_count_tool_parts() -> None:
    counter = HeuristicCounter()
    call = Message(role="assistant", parts=(ToolUsePart("t1", "bash", {"command": "ls -la"}),))
    result = Message(role="user", parts=(ToolResultPart("t1", "a.py\nb.py"),))
    assert count_message(call, counter) > counter.count("bash") + counter.count('{"command":"ls -la"}')
    assert count_message(result, counter) > counter.count("a.py\nb.py")


# -- anchor logic ------------------------------------------------------------------------------------
def _history() -> list[Message]:
    return [
        Message.user("fix the bug", id="u1"),
        Message.assistant("looking", id="a1"),
        Message.user("here is the output " * 20, id="u2"),
    ]


def test_anchor_plus_delta() -> None:
    counter = HeuristicCounter()
    history = _history()
    anchor = Anchor("a1", context_tokens=5000, output_tokens=40)
    expected = 5040 + count_message(history[2], counter)
    assert estimate_context_tokens(history, anchor=anchor, counter=counter) == expected
    # system and tools are inside the anchor already: they do not count twice
    tools = [ToolSpec("bash", "run a command", {"type": "object"})]
    assert estimate_context_tokens(history, anchor=anchor, system="x" * 999, tools=tools, counter=counter) == expected


def test_anchor_missing_from_view_gives_full_estimate() -> None:
    counter = HeuristicCounter()
    history = _history()
    full = estimate_context_tokens(history, anchor=None, system="be brief", counter=counter)
    gone = Anchor("compacted-away", context_tokens=90_000, output_tokens=10)
    assert estimate_context_tokens(history, anchor=gone, system="be brief", counter=counter) == full
    assert full > estimate_context_tokens(history, anchor=None, counter=counter)  # system counted


def test_ledger_records_and_clears() -> None:
    ledger = TokenLedger(HeuristicCounter())
    history = _history()
    full = ledger.estimate(history, "sys")
    ledger.record("a1", Usage(input_tokens=100, cache_read_tokens=4900, output_tokens=40))
    assert ledger.anchor == Anchor("a1", 5000, 40)
    assert ledger.estimate(history, "sys") == 5040 + ledger.estimate_message(history[2])
    ledger.clear()
    assert ledger.anchor is None
    assert ledger.estimate(history, "sys") == full


def test_ledger_ignores_usage_without_input_and_drops_unreplayed_reasoning() -> None:
    ledger = TokenLedger()
    ledger.record("a1", Usage(input_tokens=1000, output_tokens=300, reasoning_tokens=200))
    assert ledger.anchor == Anchor("a1", 1000, 100)
    ledger.record("a2", Usage())  # a provider that reported nothing: keep the real figure we had
    assert ledger.anchor is not None and ledger.anchor.message_id == "a1"
    ledger.record("a3", Usage(input_tokens=1000, output_tokens=300, reasoning_tokens=200), reasoning_replayed=True)
    # Replayed reasoning is input again for the rest of its turn, which the anchor remembers.
    assert ledger.anchor == Anchor("a3", 1000, 300, turn_reasoning=200)


def test_context_percent() -> None:
    assert context_percent(50_000, 100_000) == 50.0
    assert context_percent(120_000, 100_000) == 120.0
    assert context_percent(0, 0) == 0.0
    assert context_percent(5, 0) == 100.0


# -- properties --------------------------------------------------------------------------------------
_text = st.text(st.characters(codec="utf-8"), max_size=200)
_message = st.builds(
    lambda role, text: Message(role=role, parts=(TextPart(text),)),
    st.sampled_from(["user", "assistant"]),
    _text,
)


@settings(max_examples=150, deadline=None)
@given(
    history=st.lists(_message, max_size=12),
    extra=_message,
    anchor_at=st.none() | st.integers(0, 11),
    context=st.integers(0, 200_000),
    output=st.integers(0, 5_000),
)
def test_estimate_is_monotone_and_never_negative(
    history: list[Message], extra: Message, anchor_at: int | None, context: int, output: int
) -> None:
    anchor = None
    if anchor_at is not None and anchor_at < len(history):
        anchor = Anchor(history[anchor_at].id, context, output)
    before = estimate_context_tokens(history, anchor=anchor)
    after = estimate_context_tokens([*history, extra], anchor=anchor)
    assert before >= 0
    assert after >= before


@given(text=_text)
def test_counters_never_negative_and_empty_is_zero(text: str) -> None:
    for counter in (HeuristicCounter(), CharRatioCounter()):
        assert counter.count(text) >= 0
        assert counter.count("") == 0
