"""One exception tree: every exception class Nova defines derives from `nova.errors.NovaError`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import nova
from nova import errors
from nova.context.state import TaskState, apply_command
from nova.errors import CommandError, NovaError

# The documented exceptions to the rule (see the `nova.errors` docstring).
OUTSIDE_THE_TREE = {
    "nova.agent.loop._Cancelled",
    "nova.server.guards._TooLarge",
    "nova.sessions.postgres.TurnReleased",
    "nova.providers.guard.RealModelRequestError",
    "nova.providers.scripted.ScriptExhausted",
}


def _all_modules() -> list[str]:
    names = [info.name for info in pkgutil.walk_packages(nova.__path__, "nova.")]
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # Only a missing optional extra may stop an import; a broken Nova module must fail here.
            if (exc.name or "").startswith("nova"):
                raise
    return names


def test_every_exception_class_in_nova_is_a_nova_error() -> None:
    names = _all_modules()
    assert len(names) > 50  # the walk really covered the package
    found: dict[str, type[BaseException]] = {}
    for name in names:
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__.startswith("nova"):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    outside = {name for name, cls in found.items() if not issubclass(cls, NovaError)}
    assert outside == OUTSIDE_THE_TREE
    assert {"nova.errors.CommandError", "nova.errors.MissingDependency", "nova.errors.TokenizerUnavailable",
            "nova.errors.MemoryStoreError", "nova.errors.SummaryError", "nova.errors.SchemaVersionError",
            "nova.errors.SessionImportError"} <= set(found)


def test_the_docstring_draws_every_class_errors_defines() -> None:
    doc = errors.__doc__ or ""
    defined = [n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, BaseException)
               and c.__module__ == "nova.errors"]
    assert len(defined) > 20
    assert [name for name in defined if not re.search(rf"^\W*{name}\b", doc, re.MULTILINE)] == []


def test_old_import_paths_name_the_same_classes() -> None:
    from nova.context.summarize import SummaryError
    from nova.memory.store import MemoryNotFound, MemoryStoreError, UnsafeMemoryName
    from nova.providers._optional import MissingDependency
    from nova.sessions.importers import SessionImportError
    from nova.sessions.schema import SchemaVersionError
    from nova.tokens.offline_tiktoken import TokenizerUnavailable
    from nova.tools._schema import ArgumentError

    assert (ArgumentError, SummaryError, MemoryStoreError, MissingDependency, SessionImportError,
            SchemaVersionError, TokenizerUnavailable, MemoryNotFound, UnsafeMemoryName) == (
        errors.ArgumentError, errors.SummaryError, errors.MemoryStoreError, errors.MissingDependency,
        errors.SessionImportError, errors.SchemaVersionError, errors.TokenizerUnavailable,
        errors.MemoryNotFound, errors.UnsafeMemoryName)


@pytest.mark.parametrize("line", ["/frobnicate x", "/goal", "/confirm two", "/confirm 3"])
def test_a_malformed_task_state_command_is_a_command_error(line: str) -> None:
    with pytest.raises(CommandError):
        apply_command(TaskState(), line)
