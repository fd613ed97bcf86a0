"""A pydantic-ai agent whose context Nova manages, offline: pydantic-ai's FunctionModel plays the model.

    pip install 'nova-context-engine[pydantic-ai]'
    python examples/pydantic_ai_agent.py

The model reads three large build logs, reads one of them back from the file Nova saved it to, and
answers. Nova is the one `capabilities=[nova]` line; the run is recorded as a Nova session.
"""

import re

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from nova.integrations.pydantic_ai import NovaCapability

steps = iter(range(100))


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for a real model: three logs, one read-back, then the answer."""
    step = next(steps)
    if step < 3:
        return ModelResponse(parts=[ToolCallPart("read_log", {"day": step})])
    if step == 3:
        returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        saved = re.search(r"Full output saved to: (\S+)", str(returns[0].content))
        assert saved, "the first log should have been saved to a file"
        return ModelResponse(parts=[ToolCallPart("read_saved_output", {"path": saved.group(1), "limit": 3})])
    return ModelResponse(parts=[TextPart("Three days of builds, all green.")])


nova = NovaCapability.open(window=8_000)
agent = Agent(FunctionModel(model), instructions="Summarize the build logs.", capabilities=[nova])


@agent.tool_plain
def read_log(day: int) -> str:
    """The build log of one day."""
    return "\n".join(f"day {day} step {i}: ok" for i in range(3_000))


result = agent.run_sync("What happened in the builds this week?")
read_back = [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts
             if isinstance(p, ToolReturnPart) and p.tool_name == "read_saved_output"]
engine = nova.engine
print(result.output)
print(f"spilled outputs: {engine.stats.spills}; read back: {len(read_back)} ({str(read_back[0].content).splitlines()[0]})")
assert engine.manifest is not None and engine.session is not None
print(f"last call: {engine.manifest.used:,} of {engine.budget.window:,} tokens; session {engine.session.id}")
