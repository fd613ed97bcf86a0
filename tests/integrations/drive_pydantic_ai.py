"""The scripted run on a pydantic-ai agent: its FunctionModel answers from the workload and checks
every request it is sent (its size by Nova's counter, tool pairing in pydantic-ai's types, the user's
prompts, the cache points). Shared by the tests and benchmarks/integrations.py."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage
from tests.integrations.workload import SUMMARY_MARK, Answer, Workload

from nova.integrations.pydantic_ai import NovaCapability, _to_nova, pairing_violations
from nova.tokens import count_message, count_system


def _user_texts(messages: list[pm.ModelMessage]) -> str:
    out = []
    for m in messages:
        if isinstance(m, pm.ModelRequest):
            for p in m.parts:
                if isinstance(p, pm.UserPromptPart):
                    out.append(p.content if isinstance(p.content, str)
                               else " ".join(c for c in p.content if isinstance(c, str)))
    return "\n".join(out)


class Recorder:
    """The fake model: answers from the workload and checks every request it is sent."""

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
        self.cache_points: list[int] = []

    def size_of(self, messages: list[pm.ModelMessage], info: AgentInfo) -> int:
        counter = self.work.counter
        return (count_system(info.instructions or "", counter)
                + sum(count_message(_to_nova(m), counter) for m in messages))

    def __call__(self, messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        used = self.size_of(messages, info)
        usage = RequestUsage(input_tokens=used, output_tokens=20)
        last = messages[-1]
        if isinstance(last, pm.ModelRequest) and any(m in _user_texts([last]) for m in self.summary_marks):
            self.summaries += 1
            self.summary_input += used
            return pm.ModelResponse(parts=[pm.TextPart(self.work.summary())], usage=usage)
        self.sizes.append(used)
        self.violations += pairing_violations(messages)
        self.cache_points.append(sum(isinstance(c, pm.CachePoint) for m in messages if isinstance(m, pm.ModelRequest)
                                     for p in m.parts if isinstance(p, pm.UserPromptPart)
                                     and not isinstance(p.content, str) for c in p.content))
        seen = _user_texts(messages)
        missing = [p for p in self.prompts_so_far if p not in seen]
        self.lost_prompts += missing
        self.calls_missing_prompts += bool(missing)
        output = None
        if isinstance(last, pm.ModelRequest):
            returns = [p for p in last.parts if isinstance(p, pm.ToolReturnPart)]
            output = str(returns[-1].content) if returns else None
        action = self.work.next_action(output)
        if isinstance(action, Answer):
            return pm.ModelResponse(parts=[pm.TextPart(action.text)], usage=usage)
        return pm.ModelResponse(parts=[pm.ToolCallPart(action.name, action.args)], usage=usage)


def build_agent(work: Workload, recorder: Recorder, capability: NovaCapability | None) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(recorder), instructions="You read build logs.",
                                    capabilities=[capability] if capability else [])

    @agent.tool_plain
    def fetch(n: int) -> str:
        """One chunk of the build log."""
        return work.output(n)

    return agent



def scripted_run(work: Workload, capability: NovaCapability | None, *, cache_points: bool = True
                 ) -> tuple[Recorder, list[pm.ModelMessage]]:
    """The workload's turns, one `run_sync` each, the history carried over; each turn's prompt marked for
    caching as a caller may do."""
    recorder = Recorder(work)
    agent = build_agent(work, recorder, capability)
    history: list[pm.ModelMessage] = []
    for prompt in work.prompts():
        recorder.prompts_so_far.append(prompt)
        result = agent.run_sync([prompt, pm.CachePoint()] if cache_points else prompt, message_history=history)
        history = result.all_messages()
    return recorder, history
