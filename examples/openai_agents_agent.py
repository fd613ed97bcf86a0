"""An OpenAI Agents SDK agent whose context Nova manages, offline: the SDK's ScriptedModel plays the model.

    pip install 'nova-context-engine[openai-agents]'
    python examples/openai_agents_agent.py

The model reads three large build logs, reads one back from the file Nova saved it to, and answers.
Nova is the session (`NovaSession`, recorded by Nova), its `run_config()` and its read-back tool.
"""

import re

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from nova.integrations.openai_agents import NovaSession

set_tracing_disabled(True)  # offline: no trace export
steps = iter(range(100))


def model(call: ModelCall) -> ModelStep:
    """Stands in for a real model: three logs, one read-back, then the answer."""
    step = next(steps)
    if step < 3:
        return ModelStep(output=[function_call("read_log", {"day": step}, call_id=f"log-{step}")])
    if step == 3:
        outputs = [i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        saved = re.search(r"Full output saved to: (\S+)", str(outputs[0]["output"]))
        assert saved, "the first log should have been saved to a file"
        return ModelStep(output=[function_call("read_saved_output", {"path": saved.group(1), "limit": 3},
                                               call_id="read-back")])
    return ModelStep(output=[assistant_message("Three days of builds, all green.")])


@function_tool
def read_log(day: int) -> str:
    """The build log of one day."""
    return "\n".join(f"day {day} step {i}: ok" for i in range(3_000))


session = NovaSession.open(window=8_000)
agent = Agent(name="builds", instructions="Summarize the build logs.",
              model=ScriptedModel([ModelStep.respond(model) for _ in range(5)]),
              tools=[read_log, session.read_back_tool])
result = Runner.run_sync(agent, "What happened in the builds this week?", session=session,
                         run_config=session.run_config())
engine = session.engine
read_back = [i for i in session._items if i.get("type") == "function_call_output" and i.get("call_id") == "read-back"]
print(result.final_output)
print(f"spilled outputs: {engine.stats.spills}; read back: {len(read_back)} ({str(read_back[0]['output']).splitlines()[0]})")
assert engine.manifest is not None
print(f"last call: {engine.manifest.used:,} of {engine.budget.window:,} tokens; session {session.session_id}")
session.close()
