"""What every framework adapter holds and does alike: one conversation's engine, the framework model
that writes its summaries, and the view of each call prepared with that model bound (`EngineAdapter`);
and, for the adapters opened over a new engine or a given session, one `open` (`OpenableAdapter`).

The pydantic-ai capability and the LangChain middleware are opened the same way, with the same
choices (the model, the window, the summarizer, where the run is recorded): one `open` serves both, so
the choices cannot drift apart between frameworks. The OpenAI Agents session is opened by a session id
instead (it may reopen a recorded one) and keeps its own `open`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Generic, Literal, Self, TypeVar

from nova.context.summarize import Summarizer
from nova.integrations._engine import (
    CallbackProvider,
    ContextEngine,
    EngineView,
    open_engine,
    summarizer_choice,
)
from nova.model import ModelRequest, ModelResponse, ToolSpec
from nova.sessions.session import Session
from nova.settings import Settings

__all__ = ["EngineAdapter", "OpenableAdapter", "SummarizerChoice"]

SummarizerChoice = Literal["model", "extractive"]
SummaryModel = TypeVar("SummaryModel")
"""The framework's model type: what `summary_model` is given as."""


class EngineAdapter(Generic[SummaryModel]):
    """One conversation's engine, the framework model that writes its compaction summaries (None: the
    run's own model) and the provider that asks it (None: the summarizer asks no model)."""

    framework: ClassVar[str]
    """The `provider` the run's session is recorded under (one of `FRAMEWORKS`)."""

    def __init__(self, engine: ContextEngine, *, summary_model: SummaryModel | None = None,
                 provider: CallbackProvider | None = None) -> None:
        super().__init__()
        self.engine = engine
        self.summary_model = summary_model
        self._provider = provider

    def _bound_view(self, system: str, tools: Sequence[ToolSpec],
                    summarize: Callable[[ModelRequest], ModelResponse] | None) -> EngineView:
        """The engine's view of the next call, with `summarize` (the framework's model, asked for this call)
        answering any summary the view needs; unbound again afterwards, so a summary asked outside a
        call fails and leaves history unchanged."""
        if self._provider is not None:
            self._provider.bind(summarize)
        try:
            return self.engine.prepare(system=system, tools=tools)
        finally:
            if self._provider is not None:
                self._provider.bind(None)


class OpenableAdapter(EngineAdapter[SummaryModel]):
    """An adapter opened over a new engine, recorded in a new session or a given one."""

    @classmethod
    def open(
        cls,
        *,
        model: str = "",
        window: int | None = None,
        summarizer: SummarizerChoice | Summarizer = "model",
        summary_model: SummaryModel | None = None,
        session: Session | None = None,
        home: Path | None = None,
        record: bool = True,
        settings: Settings | None = None,
        title: str = "",
    ) -> Self:
        """An adapter over a new engine. `model` names the model for Nova's token counter and prices (and,
        with no `window`, the model table's window). `summarizer`: "model" asks `summary_model`, else the
        run's own model; "extractive" needs no model; or any Nova `Summarizer`. The run is recorded in a new
        session under `home` (default: Nova's home) unless `session` is given or `record` is False."""
        chosen, provider = summarizer_choice(summarizer, framework=cls.framework, model=model)
        engine = open_engine(framework=cls.framework, model=model, window=window, session=session, home=home,
                             record=record, settings=settings, summarizer=chosen, title=title)
        return cls(engine, summary_model=summary_model, provider=provider)
