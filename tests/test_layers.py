"""Layers that show: a module imports only from its own layer or the ones below it.

The order is declared once, here, lowest first. Every import counts: at module level, inside a function
(a lazy import is still a dependency) and under `TYPE_CHECKING`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nova

LAYERS: list[tuple[str, ...]] = [
    # Values everything may use: messages, core request/response types, errors, events, settings.
    ("nova", "nova.errors", "nova.files", "nova.messages", "nova.core", "nova.incremental", "nova.invariants",
     "nova.events", "nova.settings", "nova.secret_paths", "nova.special_files", "nova.text"),
    ("nova.tokens",),
    ("nova.providers",),
    ("nova.sessions",),
    # The seams the context engine plugs into, and the tools and permissions the loop runs.
    ("nova.extensions", "nova.agent.tools", "nova.agent.shell_parse", "nova.agent.permissions", "nova.agent.approval",
     "nova.agent.read_policy", "nova.agent.sandbox"),
    ("nova.context", "nova.memory", "nova.mcp", "nova.skills"),
    # The agent: the loop, its assembly, and what drives it without a surface. The provider factory
    # sits here because it also builds the offline demo model, which simulates a provider's cache.
    ("nova.agent", "nova.app", "nova.replay", "nova.replay_views", "nova.evaluation", "nova.demo", "nova.providers.factory"),
    # Surfaces: the session host and its context report, the CLI, the commands, the server, the terminal UI.
    ("nova.host", "nova.context_view", "nova.commands", "nova.cli", "nova.cli_render", "nova.server", "nova.tui",
     "nova.figures", "nova.progress", "nova.cli_progress"),
    # Test support may use anything; nothing in the package may use it.
    ("nova.testing",),
]

SRC = Path(nova.__file__).resolve().parent


def layer_of(module: str) -> int:
    """The layer of the most specific declared name that is `module` or a package containing it."""
    best, best_len = -1, -1
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best_len:
                best, best_len = index, len(name)
    if best < 0:
        raise AssertionError(f"{module} is in no declared layer: add it to LAYERS in {__file__}")
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str) -> set[str]:
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            if base == "nova":  # `from nova import events` names a module
                found.update(f"nova.{alias.name}" for alias in node.names)
            else:
                found.add(base)
    return {name for name in found if name == "nova" or name.startswith("nova.")}


def test_every_module_imports_only_its_layer_or_lower() -> None:
    violations = []
    for path in sorted(SRC.rglob("*.py")):
        module = module_name(path)
        own = layer_of(module)
        for imported in sorted(imports_of(path, module)):
            if layer_of(imported) > own:
                violations.append(f"{module} (layer {own}) imports {imported} (layer {layer_of(imported)})")
    assert violations == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from nova.server.app import create_app\n", encoding="utf-8")
    imported = imports_of(bad, "nova.sessions.bad")
    assert imported == {"nova.server.app"}
    assert layer_of("nova.server.app") > layer_of("nova.sessions.bad")
