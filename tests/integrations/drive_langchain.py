"""The scripted run on a LangChain v1 agent: a subclass of LangChain's GenericFakeChatModel answers from
the workload and checks every request it is sent (its size by Nova's counter, tool pairing in LangChain's
messages, the user's prompts). Shared by the tests and benchmarks/integrations.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from tests.integrations.workload import SUMMARY_MARK, Answer, Workload

from nova.integrations.langchain import _to_nova, pairing_violations
from nova.tokens import count_message


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's generic fake chat model, answering from a function of the messages it is sent, with
    tools bound as a chat model binds them (the agent calls `bind_tools`)."""

    responder: Callable[[list[BaseMessage]], AIMessage]

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.responder(messages))])


def _user_texts(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(m.text for m in messages if isinstance(m, HumanMessage))


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

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        counter = self.work.counter
        history = [m for m in messages if m.type != "system"]
        groups: list[list[BaseMessage]] = []
        for m in history:
            if groups and isinstance(m, ToolMessage) and isinstance(groups[-1][0], ToolMessage):
                groups[-1].append(m)
            else:
                groups.append([m])
        used = sum(count_message(_to_nova(g), counter) for g in groups) + \
            sum(counter.count(m.text) for m in messages if m.type == "system")
        self.call += 1
        usage = {"input_tokens": used, "output_tokens": 20, "total_tokens": used + 20}
        if any(m in _user_texts(history[-1:]) for m in self.summary_marks):
            self.summaries += 1
            self.summary_input += used
            return AIMessage(content=self.work.summary(), usage_metadata=usage)
        self.sizes.append(used)
        self.violations += pairing_violations(history)
        seen = _user_texts(history)
        missing = [p for p in self.prompts_so_far if p not in seen]
        self.lost_prompts += missing
        self.calls_missing_prompts += bool(missing)
        last = history[-1]
        action = self.work.next_action(last.text if isinstance(last, ToolMessage) else None)
        if isinstance(action, Answer):
            return AIMessage(content=action.text, usage_metadata=usage)
        return AIMessage(content="", tool_calls=[{"name": action.name, "args": action.args, "id": f"call-{self.call}"}],
                         usage_metadata=usage)


def build_agent(work: Workload, recorder: Callable[[list[BaseMessage]], AIMessage], middleware: list[Any], checkpointer: Any = None) -> Any:
    @tool
    def fetch(n: int) -> str:
        """One chunk of the build log."""
        return work.output(n)

    model = ScriptedChatModel(messages=iter(()), responder=recorder)
    return create_agent(model, tools=[fetch], system_prompt="You read build logs.", middleware=middleware,
                        checkpointer=checkpointer)



def scripted_run(work: Workload, middleware: list[Any], *, recorder: Recorder | None = None
                 ) -> tuple[Recorder, list[BaseMessage]]:
    """The workload's turns, one `invoke` each, the messages carried over."""
    recorder = recorder or Recorder(work)
    agent = build_agent(work, recorder, middleware)
    messages: list[BaseMessage] = []
    for prompt in work.prompts():
        recorder.prompts_so_far.append(prompt)
        state = agent.invoke({"messages": [*messages, HumanMessage(prompt)]}, {"recursion_limit": 1000})
        messages = list(state["messages"])
    return recorder, messages
