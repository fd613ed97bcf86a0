"""A LangChain agent whose context Nova manages, offline: LangChain's fake chat model plays the model.

    pip install 'nova-context-engine[langchain]'
    python examples/langchain_agent.py

The model reads three large build logs, reads one back from the file Nova saved it to, and answers.
Nova is the one `middleware=[nova]` line; the run is recorded as a Nova session.
"""

import re
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from nova.integrations.langchain import NovaMiddleware


class FakeModel(GenericFakeChatModel):
    """Stands in for a real model: three logs, one read-back, then the answer."""

    step: int = 0

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "FakeModel":
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        step, self.step = self.step, self.step + 1
        if step < 3:
            answer = AIMessage("", tool_calls=[{"name": "read_log", "args": {"day": step}, "id": f"log-{step}"}])
        elif step == 3:
            first = next(m for m in messages if isinstance(m, ToolMessage))
            saved = re.search(r"Full output saved to: (\S+)", first.text)
            assert saved, "the first log should have been saved to a file"
            answer = AIMessage("", tool_calls=[{"name": "read_saved_output", "id": "read-back",
                                                "args": {"path": saved.group(1), "limit": 3}}])
        else:
            answer = AIMessage("Three days of builds, all green.")
        return ChatResult(generations=[ChatGeneration(message=answer)])


@tool
def read_log(day: int) -> str:
    """The build log of one day."""
    return "\n".join(f"day {day} step {i}: ok" for i in range(3_000))


nova = NovaMiddleware.open(window=8_000)
agent = create_agent(FakeModel(messages=iter(())), tools=[read_log], system_prompt="Summarize the build logs.",
                     middleware=[nova])
state = agent.invoke({"messages": [("user", "What happened in the builds this week?")]})
engine = nova.engine
read_back = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "read_saved_output"]
print(state["messages"][-1].text)
print(f"spilled outputs: {engine.stats.spills}; read back: {len(read_back)} ({read_back[0].text.splitlines()[0]})")
assert engine.manifest is not None and engine.session is not None
print(f"last call: {engine.manifest.used:,} of {engine.budget.window:,} tokens; session {engine.session.id}")
