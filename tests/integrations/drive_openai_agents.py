"""The scripted run on an OpenAI Agents SDK agent: the SDK's ScriptedModel answers from the workload and
checks every request it is sent (its size by Nova's counter, call/output pairing in the SDK's items, the
user's prompts). Shared by the tests and benchmarks/integrations.py."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agents import Agent, RunConfig, Runner, Tool, function_tool, set_tracing_disabled
from agents.memory import Session
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage as AgentsUsage
from tests.integrations.workload import SUMMARY_MARK, Answer, Workload

from nova.integrations.openai_agents import _to_nova, pairing_violations
from nova.model import ToolSpec
from nova.tokens import count_message, count_system, count_tools

set_tracing_disabled(True)


def _user_texts(items: list[Any]) -> str:
    out = []
    for item in items:
        if isinstance(item, Mapping) and item.get("role") == "user":
            content = item.get("content")
            out.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(out)


class Recorder:
    def __init__(self, work: Workload, summary_marks: tuple[str, ...] = (SUMMARY_MARK,)) -> None:
        self.work = work
        self.summary_marks = summary_marks
        self.sizes: list[int] = []
        self.violations: list[str] = []
        self.lost_prompts: list[str] = []
        self.prompts_so_far: list[str] = []
        self.summaries = 0
        self.summary_input = 0
        self.calls_missing_prompts = 0
        """Requests that lacked one of the user's prompts so far."""
        """Tokens the summary calls were sent."""
        self.call = 0

    def size_of(self, call: ModelCall) -> int:
        counter = self.work.counter
        tools = [ToolSpec(t.name, t.description, t.params_json_schema) for t in call.tools]
        return (count_system(call.system_instructions or "", counter) + count_tools(tools, counter)
                + sum(count_message(_to_nova([item]), counter) for item in call.input))

    def __call__(self, call: ModelCall) -> ModelStep:
        used = self.size_of(call)
        self.call += 1
        usage = AgentsUsage(requests=1, input_tokens=used, output_tokens=20, total_tokens=used + 20)
        items = list(call.input)
        if any(m in _user_texts(items[-1:]) for m in self.summary_marks):
            self.summaries += 1
            self.summary_input += used
            return ModelStep(output=[assistant_message(self.work.summary())], usage=usage)
        self.sizes.append(used)
        self.violations += pairing_violations(items)
        seen = _user_texts(items)
        missing = [p for p in self.prompts_so_far if p not in seen]
        self.lost_prompts += missing
        self.calls_missing_prompts += bool(missing)
        last = items[-1]
        output = str(last.get("output")) if isinstance(last, Mapping) and last.get("type") == "function_call_output" \
            else None
        action = self.work.next_action(output)
        if isinstance(action, Answer):
            return ModelStep(output=[assistant_message(action.text, item_id=f"msg-{self.call}")], usage=usage)
        return ModelStep(output=[function_call(action.name, action.args, call_id=f"call-{self.call}")], usage=usage)



def scripted_run(work: Workload, session: Session, *, run_config: RunConfig | None = None,
                 tools: Sequence[Tool] = ()) -> Recorder:
    """The workload's turns, one `Runner.run_sync` each, in `session`."""
    recorder = Recorder(work)

    @function_tool
    def fetch(n: int) -> str:
        """One chunk of the build log."""
        return work.output(n)

    model = ScriptedModel([ModelStep.respond(recorder) for _ in range(work.steps * 2)])
    agent: Agent[Any] = Agent(name="logs", instructions="You read build logs.", model=model, tools=[fetch, *tools])
    for prompt in work.prompts():
        recorder.prompts_so_far.append(prompt)
        Runner.run_sync(agent, prompt, session=session, run_config=run_config or RunConfig(), max_turns=1000)
    return recorder
