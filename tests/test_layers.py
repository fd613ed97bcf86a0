"""Layers that show: a module imports only from its own layer or the ones below it, and no two packages
import each other.

The order is declared once, here, lowest first; `docs/architecture.md` prints the same table and
`tests/test_docs.py` holds the two together. Every module of `src/nova` must fall in a declared layer
(an undeclared one fails: a new package is a decision, not a default). Every import counts: at module
level, inside a function (a lazy import is still a dependency) and under `TYPE_CHECKING`.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import nova

LAYERS: list[tuple[str, ...]] = [
    # Values everything may use: messages, request/response types, errors, events, settings, the version;
    # and files opened safely, which is how settings reads config.json.
    ("nova.messages", "nova.model", "nova.errors", "nova.events", "nova.settings", "nova.version", "nova.fs", "nova.lazy"),
    # History as the loop keeps it.
    ("nova.history",),
    ("nova.tokens",),
    # Provider adapters: wire formats, error classification, prices.
    ("nova.providers",),
    # What people read: figures, progress, one-line text.
    ("nova.present",),
    ("nova.sessions",),
    # The built-in tools, the permission gate in front of them and the policies they consult.
    ("nova.tools",),
    # The context engine and the extension seam it plugs into.
    ("nova.context",),
    # Extensions over the context engine.
    ("nova.memory", "nova.skills", "nova.mcp"),
    # The agent: the loop, its assembly, sub-agents, the provider factory and the offline demo model.
    ("nova.agent",),
    # Replay and scoring of recorded sessions.
    ("nova.evaluation",),
    # Nova's context engine inside other agent frameworks (pydantic-ai, the OpenAI Agents SDK, LangChain).
    ("nova.integrations",),
    # Live sessions kept open for the surfaces.
    ("nova.host",),
    # Surfaces.
    ("nova.server", "nova.tui"),
    ("nova.cli", "nova.__main__"),
    # The public API and test support may use anything; nothing in the package may use them.
    ("nova", "nova.testing"),
]

SRC = Path(nova.__file__).resolve().parent


def declared_layer(module: str) -> int | None:
    """The layer of the most specific declared name that is `module` or a package containing it.

    The package `nova` itself is declared by its exact name only (it is the public API, not a
    container of the rest)."""
    best, best_len = None, -1
    for index, names in enumerate(LAYERS):
        for name in names:
            covers = module == name or (name != "nova" and module.startswith(name + "."))
            if covers and len(name) > best_len:
                best, best_len = index, len(name)
    return best


def layer_of(module: str) -> int:
    layer = declared_layer(module)
    if layer is None:
        raise AssertionError(f"{module} is in no declared layer: add it to LAYERS in {__file__}")
    return layer


def module_name(path: Path, root: Path = SRC) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules(root: Path = SRC) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imports_of(path: Path, module: str, known: Iterable[str] = ()) -> set[str]:
    """The `nova` modules `path` imports; `from package import name` names the module `package.name`
    when there is one."""
    known = set(known)
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
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known or base == "nova" else base)
    return {name for name in found if name == "nova" or name.startswith("nova.")}


def import_edges(root: Path = SRC) -> list[tuple[str, str]]:
    modules = all_modules(root)
    return [(module, imported) for module, path in modules.items()
            for imported in sorted(imports_of(path, module, modules)) if imported != module]


def package_cycles(edges: Iterable[tuple[str, str]], packages: set[str] | None) -> list[list[str]]:
    """Groups of sibling units (modules or packages under one parent) that import each other, where at
    least one of them is a package (with `packages` None: any, modules too): `a.b.x → a.c.y` is an arrow
    between the siblings `a.b` and `a.c`."""
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        s, t = source.split("."), target.split(".")
        common = 0
        while common < min(len(s), len(t)) and s[common] == t[common]:
            common += 1
        if common >= min(len(s), len(t)):
            continue  # one contains the other: a package's __init__ and its own modules
        a, b = ".".join(s[: common + 1]), ".".join(t[: common + 1])
        graph[a].add(b)
    cycles = []
    for group in strongly_connected(graph):
        if len(group) > 1 and (packages is None or any(unit in packages for unit in group)):
            cycles.append(sorted(group))
    return sorted(cycles)


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on a deep graph)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    counter = 0
    for start in sorted(set(graph) | {t for ts in graph.values() for t in ts}):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def packages_of(root: Path = SRC) -> set[str]:
    return {module_name(path, root) for path in root.rglob("__init__.py")}


def test_every_module_is_in_a_declared_layer() -> None:
    undeclared = [module for module in all_modules() if declared_layer(module) is None]
    assert undeclared == []


def test_every_module_imports_only_its_layer_or_lower() -> None:
    violations = []
    for module, imported in import_edges():
        own, theirs = layer_of(module), layer_of(imported)
        if theirs > own:
            violations.append(f"{module} (layer {own}) imports {imported} (layer {theirs})")
    assert violations == []


def test_no_two_packages_import_each_other() -> None:
    assert package_cycles(import_edges(), packages_of()) == []


def test_no_two_modules_import_each_other() -> None:
    # Inside a package too, a lazy import in a function included: two modules that need each other are one
    # job split in two, or share a value that belongs in a third module below both.
    assert package_cycles(import_edges(), None) == []


def test_nothing_flat_at_the_top_but_the_values() -> None:
    top = {path.stem for path in SRC.glob("*.py")}
    values = {name.removeprefix("nova.") for name in LAYERS[0]}
    assert top - values - {"__init__", "__main__", "testing"} == set()


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from nova.server.app import create_app\n", encoding="utf-8")
    imported = imports_of(bad, "nova.sessions.bad")
    assert imported == {"nova.server.app"}
    assert layer_of("nova.server.app") > layer_of("nova.sessions.bad")


def test_the_checker_refuses_an_undeclared_module() -> None:
    assert declared_layer("nova.somewhere_new") is None
    assert declared_layer("nova.tools.policy.sandbox") == declared_layer("nova.tools")


def test_the_checker_sees_a_cycle_between_packages(tmp_path: Path) -> None:
    root = tmp_path / "nova"
    for package in ("a", "b"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("", encoding="utf-8")
    (root / "__init__.py").write_text("", encoding="utf-8")
    (root / "a" / "x.py").write_text("from nova.b.y import thing\n", encoding="utf-8")
    (root / "b" / "y.py").write_text("def thing():\n    from nova.a import x\n", encoding="utf-8")
    assert package_cycles(import_edges(root), packages_of(root)) == [["nova.a", "nova.b"]]


def test_the_checker_sees_a_cycle_between_two_modules(tmp_path: Path) -> None:
    root = tmp_path / "nova"
    (root / "a").mkdir(parents=True)
    (root / "__init__.py").write_text("", encoding="utf-8")
    (root / "a" / "__init__.py").write_text("", encoding="utf-8")
    (root / "a" / "x.py").write_text("from nova.a.y import thing\n", encoding="utf-8")
    (root / "a" / "y.py").write_text("def thing():\n    from nova.a.x import other\n", encoding="utf-8")
    assert package_cycles(import_edges(root), packages_of(root)) == []
    assert package_cycles(import_edges(root), None) == [["nova.a.x", "nova.a.y"]]
