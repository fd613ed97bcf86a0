"""The typer group and command classes of `nova`, chosen so that starting a command costs little
more than importing typer.

- `LazyGroup`: the root knows its `nova.cli.commands` subcommands only by the dotted path of their typer
  app or function and the help line it lists for them. A subcommand's module (and whatever it imports:
  sessions, the context engine, rich tables) loads when that command runs or its own `--help` is asked.
- `HelpGroup`: click's plain help, listing each subcommand with its whole first paragraph.
- `NovaCommand` (and both groups): an unset `--help` reads False rather than None. Typer validates a
  None parameter value through a pydantic adapter, which imports pydantic (tens of milliseconds) on
  every run; a bool flag holding a bool is left alone. The root's text options (`--provider` …) pass
  their value through for the same reason.
- Every command and group answers `-h` as well as `--help`, and a yes/no option is shown as a bare flag
  (`--json`, never `--json <bool>`, which reads as if it wanted `--json true`).

Every command of `nova` is declared with `cls=NovaCommand`, every group with one of the groups.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import typer
import typer.main
from typer.core import MarkupMode, TyperCommand, TyperGroup, TyperOption

if TYPE_CHECKING:
    from typer._click import Command, Context, HelpFormatter

__all__ = ["HELP_MARKUP", "HelpGroup", "LazyCommand", "LazyGroup", "NovaCommand", "command_group", "first_paragraph",
           "load_command"]

# Typer's rich help formatter imports rich's markdown, tables and tracebacks (about as long as
# importing typer itself), which alone would double the time of `nova --help`. Click's plain
# formatter shows the same texts.
HELP_MARKUP: MarkupMode = None


def command_group(help: str) -> typer.Typer:
    """A `nova <group>` of subcommands: listed with click's plain help (`HelpGroup`), its usage shown when
    called bare. Completion and pretty tracebacks are the `nova` app's to set, not a group's."""
    return typer.Typer(help=help, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                       cls=HelpGroup, rich_markup_mode=HELP_MARKUP)


def first_paragraph(help_text: str | None) -> str:
    """The line a command is listed with: its help up to the first blank line, on one line."""
    return " ".join((help_text or "").split("\n\n", 1)[0].split())


HELP_OPTION_NAMES = ("-h", "--help")


def _unset_help_is_false(option: TyperOption | None) -> TyperOption | None:
    if option is not None and option.default is None:
        option.default = False
    return option


def _with_short_help(kwargs: dict[str, Any]) -> dict[str, Any]:
    settings = dict(kwargs.get("context_settings") or {})
    settings.setdefault("help_option_names", list(HELP_OPTION_NAMES))
    return {**kwargs, "context_settings": settings}


def _flags_as_flags(params: list[Any]) -> None:
    """Typer takes an option for a flag only when its annotation is exactly `bool`; a yes/no option it
    missed would be listed as `--json <bool>`. Such an option without a value type is a flag."""
    for param in params:
        if isinstance(param, TyperOption) and not param.is_flag and not param.secondary_opts \
                and param.type_descriptor.annotation is bool:
            param.is_flag = param.is_bool_flag = True


class NovaCommand(TyperCommand):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **_with_short_help(kwargs))
        _flags_as_flags(self.params)

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        return _unset_help_is_false(super().get_help_option(ctx))


class HelpGroup(TyperGroup):
    """Lists each subcommand with its whole first paragraph (click's formatter cuts it at ~45
    characters and the first full stop)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **_with_short_help(kwargs))
        _flags_as_flags(self.params)

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        return _unset_help_is_false(super().get_help_option(ctx))

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = [(name, first_paragraph(cmd.short_help or cmd.help))
                for name, cmd in self.commands.items() if not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@dataclass(frozen=True, slots=True)
class LazyCommand:
    """A subcommand by reference: `target` is `package.module:attribute`, a `typer.Typer` or a command
    function; `help` is the first paragraph of that command's help, listed by the parent's `--help`."""

    target: str
    help: str


def _pass_text_through(params: list[Any]) -> None:
    """Typer coerces every option value through a pydantic adapter built on first use, even an unset
    option's None, so a root option like `--provider` would import pydantic on every `nova` start. A
    plain text option's value is already text: its coercion is preset to pass it through."""
    try:
        from typer._coercion import PassThroughRuntimeParam
    except ImportError:  # a typer without pydantic coercion has nothing to avoid
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if (descriptor is not None and descriptor.annotation is str and descriptor.file_annotation is None
                and getattr(param, "_runtime_param", False) is None):
            param._runtime_param = PassThroughRuntimeParam(parameter_info=descriptor.parameter_info,
                                                           annotation=str)


class _NotLoaded(TyperCommand):
    """Stands in for a lazy subcommand in the group's table, so that listing, help and "did you mean"
    suggestions see every name. `LazyGroup.get_command` swaps it for the real command."""

    def __init__(self, name: str, spec: LazyCommand) -> None:
        super().__init__(name=name, help=spec.help)
        self.spec = spec

    def invoke(self, ctx: Context) -> Any:
        raise RuntimeError(f"{self.name!r} was not loaded: reach it through get_command")


class LazyGroup(HelpGroup):
    """A group whose subclasses declare `lazy_commands`: name → `LazyCommand`."""

    lazy_commands: ClassVar[Mapping[str, LazyCommand]] = {}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _pass_text_through(self.params)
        for name, spec in self.lazy_commands.items():
            self.commands.setdefault(name, _NotLoaded(name, spec))

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = self.commands.get(cmd_name)
        if isinstance(command, _NotLoaded):
            command = self.commands[cmd_name] = load_command(cmd_name, command.spec,
                                                             markup=self.rich_markup_mode)
        return command


def load_command(name: str, spec: LazyCommand, *, markup: MarkupMode) -> Command:
    """Import the target and build its click command as `add_typer`/`command` on the root would."""
    module_name, _, attribute = spec.target.partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    host = typer.Typer(add_completion=False, rich_markup_mode=markup, pretty_exceptions_enable=False)
    if isinstance(target, typer.Typer):
        host.add_typer(target, name=name, cls=HelpGroup)
    else:
        host.command(name, cls=NovaCommand)(target)
    return typer.main.get_group(host).commands[name]
