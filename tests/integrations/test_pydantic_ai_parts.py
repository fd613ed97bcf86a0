"""NovaCapability's smaller duties, quickly: cache points within the provider's limit, a caller's own cache
setting left alone, and the capability's read-back tool on the agent."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel

from nova.integrations.pydantic_ai import NovaCapability, _place_cache_point


def _prompt(*content: Any) -> pm.ModelRequest:
    return pm.ModelRequest(parts=[pm.UserPromptPart(content=list(content))])


def _points(view: list[pm.ModelMessage]) -> list[int]:
    return [i for i, m in enumerate(view) if isinstance(m, pm.ModelRequest) for p in m.parts
            if isinstance(p, pm.UserPromptPart) and not isinstance(p.content, str)
            for c in p.content if isinstance(c, pm.CachePoint)]


def test_stray_cache_points_go_and_one_ends_the_last_prompt() -> None:
    view: list[pm.ModelMessage] = [_prompt("one", pm.CachePoint()), pm.ModelResponse(parts=[pm.TextPart("a")]),
                                   _prompt("two", pm.CachePoint()), pm.ModelResponse(parts=[pm.TextPart("b")]),
                                   _prompt("three")]
    clean: weakref.WeakValueDictionary[int, pm.ModelRequest] = weakref.WeakValueDictionary()
    placed = _place_cache_point(view, True, clean)
    assert _points(placed) == [4]
    assert _points(view) == [0, 2]  # the run's own history is not touched
    assert _points(_place_cache_point(view, False, clean)) == []
    # The same requests again: the clean ones are not looked at twice, and the answer is the same.
    assert _points(_place_cache_point(placed, True, clean)) == [4]


def test_a_callers_cache_setting_is_kept_and_the_read_back_tool_is_offered(tmp_path: Path) -> None:
    offered: list[list[str]] = []

    def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        offered.append([t.name for t in info.function_tools])
        return pm.ModelResponse(parts=[pm.TextPart("ok")])

    capability = NovaCapability.open(window=16_000, home=tmp_path / "home", summarizer="extractive")
    agent: Agent[None, str] = Agent(FunctionModel(model), instructions="Be brief. " * 400,
                                    capabilities=[capability])
    result = agent.run_sync("hello", model_settings={"cache": True})
    assert result.output == "ok"
    assert offered == [["read_saved_output"]]
    assert capability.engine.manifest is not None and capability.engine.manifest.used > 0
