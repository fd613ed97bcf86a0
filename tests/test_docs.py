"""The docs tell the truth about the code: README.md and docs/*.md are checked against it.

- Every `nova …` command and every `--flag` a page shows (in code blocks and in inline code) exists in
  the real command tree (typer's click commands, lazily mounted groups loaded).
- Every relative link resolves to a file, and every `#anchor` to a heading of the page it names
  (GitHub's slugs).
- The layer table of docs/architecture.md is `LAYERS` of tests/test_layers.py, and its list of built-in
  extensions is every class in src/nova that derives from `Extension`, with its module and order.
- README.md is an entry: at most 12,000 characters, starting with the two commands a newcomer copies.

Each checker is a plain function returning its problems, so each is also shown failing on a made-up page.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer.main
from typer.core import TyperGroup, TyperOption

import nova
from nova.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(nova.__file__).resolve().parent
README_LIMIT = 12_000
SHELL_FENCES = {"", "bash", "sh", "shell", "console", "zsh"}
HELP_FLAGS = ("-h", "--help")


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


# -- reading Markdown --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fence:
    language: str
    text: str


_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)[^\n]*$")


def split_fences(text: str) -> tuple[str, list[Fence]]:
    """The page with its fenced blocks blanked out (so line numbers and prose stay), and the blocks."""
    prose: list[str] = []
    fences: list[Fence] = []
    opened: tuple[str, str] | None = None
    body: list[str] = []
    for line in text.splitlines():
        match = _FENCE.match(line)
        if opened is None and match:
            opened = (match.group(2), match.group(3).lower())
            body = []
            prose.append("")
        elif opened is not None and line.strip().startswith(opened[0]) and not line.strip().strip(opened[0][0]):
            fences.append(Fence(opened[1], "\n".join(body)))
            opened = None
            prose.append("")
        elif opened is not None:
            body.append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), fences


_INLINE = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)


def inline_code(prose: str) -> list[str]:
    """Inline code spans of the prose; a span may wrap onto the next line. Table cells escape `|` as `\\|`."""
    return [" ".join(m.group(2).replace("\\|", "|").split()) for m in _INLINE.finditer(prose)]


def without_inline_code(prose: str) -> str:
    return _INLINE.sub("", prose)


# -- the command tree --------------------------------------------------------------------------------
@dataclass
class Node:
    """A command of `nova`: the options it takes (flag → whether it takes a value) and its subcommands."""

    options: dict[str, bool] = field(default_factory=dict)
    commands: dict[str, Node] = field(default_factory=dict)


def command_tree() -> Node:
    root = typer.main.get_command(app)
    # The command's own context class: typer's bundled click in new versions, click itself in older ones.
    return _node(root, root.context_class(root, info_name="nova"))


def _node(command: Any, ctx: Any) -> Node:
    node = Node(options=dict.fromkeys(HELP_FLAGS, False))
    for param in command.params:
        if isinstance(param, TyperOption):
            takes_value = not (param.is_flag or param.count)
            for name in (*param.opts, *param.secondary_opts):
                node.options[name] = takes_value
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            # `get_command` is what loads a lazily mounted group or command (nova.cli.commands.typer_classes).
            sub = command.get_command(ctx, name)
            assert sub is not None, f"nova lists {name!r} but cannot load it"
            node.commands[name] = _node(sub, sub.context_class(sub, parent=ctx, info_name=name))
    return node


def every_flag(node: Node) -> set[str]:
    return set(node.options) | {f for sub in node.commands.values() for f in every_flag(sub)}


# -- commands shown on a page ------------------------------------------------------------------------
_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")"}


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote in an example: words are enough to find commands and flags
        return text.split()


def simple_commands(text: str) -> Iterator[list[str]]:
    """The simple commands of a shell snippet: split at `&&`, `;`, a spaced `|` and the like."""
    current: list[str] = []
    for token in _tokens(text):
        ends = token.endswith(";") and token != ";"
        token = token.rstrip(";") if ends else token
        if token in _SEPARATORS:
            yield current
            current = []
            continue
        current.append(token)
        if ends:
            yield current
            current = []
    yield current


def nova_arguments(command: list[str]) -> list[str] | None:
    """What follows `nova` when the command runs nova (`nova`, `.venv/bin/nova`, after `$ ` and `VAR=x`);
    None for any other program (`src/nova` is a folder, `nova.context` a module)."""
    words = list(command)
    while words and (words[0] == "$" or re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0])):
        words.pop(0)
    if words and (words[0] == "nova" or words[0].endswith("bin/nova")):
        return words[1:]
    return None


def _bare(token: str) -> str:
    return token.strip("[]{}")


def check_arguments(tree: Node, arguments: Sequence[str]) -> list[str]:
    """What is wrong with `nova ARGUMENTS` as the docs write it: `a|b` is either word, `[x]` optional."""
    problems: list[str] = []
    walk(tree, ["nova"], [_bare(t) for t in arguments if _bare(t)], problems)
    return problems


def walk(node: Node, path: list[str], words: list[str], problems: list[str]) -> None:
    where = " ".join(path)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word in ("…", "...") or word.startswith("<"):
            if node.commands:
                return  # the rest of the command line is elided
            continue  # an elided argument
        alternatives = word.split("|") if "|" in word and not word.startswith("'") else [word]
        flags = [a for a in alternatives if a.startswith("-") and a != "-"]
        if flags:
            for flag in flags:
                name = flag.split("=", 1)[0]
                if name not in node.options:
                    problems.append(f"`{where}` has no option {name}")
                elif node.options[name] and "=" not in flag and len(alternatives) == 1:
                    index += 1  # its value
            continue
        if node.commands:
            unknown = [a for a in alternatives if a not in node.commands]
            if unknown:
                problems.append(f"`{where}` has no command {', '.join(unknown)}")
                return
            for alternative in alternatives:
                walk(node.commands[alternative], [*path, alternative], words[index:], problems)
            return
        # a leaf: the rest are its arguments and options


def command_problems(page: str, text: str, tree: Node) -> list[str]:
    prose, fences = split_fences(text)
    snippets = [f.text.replace("\\\n", " ") for f in fences if f.language in SHELL_FENCES]
    spans = inline_code(prose)
    known = every_flag(tree)
    problems: list[str] = []
    for snippet in [line for s in snippets for line in s.splitlines()] + spans:
        for command in simple_commands(snippet):
            arguments = nova_arguments(command)
            if arguments is not None:
                problems += [f"{page}: `{' '.join(command)}`: {p}" for p in check_arguments(tree, arguments)]
    for span in spans:
        if span.startswith("--"):
            flag = span.split()[0].split("=", 1)[0]
            if flag not in known:
                problems.append(f"{page}: `{span}`: no nova command has the option {flag}")
    return problems


# -- links and anchors -------------------------------------------------------------------------------
_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    prose, _ = split_fences(text)
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in _HEADING.finditer(prose):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def link_problems(path: Path, root: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    prose, _ = split_fences(text)
    page = path.relative_to(root).as_posix()
    problems: list[str] = []
    for target in _LINK.findall(without_inline_code(prose)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.is_relative_to(root.resolve()):
            problems.append(f"{page}: link {target} leaves the repository")
            continue
        if not linked.exists():
            problems.append(f"{page}: link {target}: no file {file_part}")
            continue
        if anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text(encoding="utf-8")):
            problems.append(f"{page}: link {target}: {linked.name} has no heading #{anchor}")
    return problems


# -- the architecture page ---------------------------------------------------------------------------
def section(text: str, heading: str) -> str:
    """The part of the page under `heading` (any level) up to the next heading of that level or higher."""
    prose, _ = split_fences(text)
    match = re.search(rf"^(#+)\s+{re.escape(heading)}\s*$", prose, re.M)
    if match is None:
        return ""
    level = len(match.group(1))
    rest = prose[match.end():]
    end = re.search(rf"^#{{1,{level}}}\s", rest, re.M)
    return rest[: end.start()] if end else rest


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in `text`, as cells."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        rows.append(cells)
    return [r for r in rows[1:] if not all(re.fullmatch(r":?-+:?", c) for c in r)]


def documented_layers(text: str) -> list[tuple[str, ...]]:
    return [tuple(re.findall(r"`([^`]+)`", row[1])) for row in table_rows(section(text, "Layers")) if len(row) > 1]


def declared_layers(test_layers: Path = ROOT / "tests" / "test_layers.py") -> list[tuple[str, ...]]:
    spec = importlib.util.spec_from_file_location("nova_docs_test_layers", test_layers)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [tuple(names) for names in module.LAYERS]


def layer_problems(text: str, declared: list[tuple[str, ...]]) -> list[str]:
    shown = documented_layers(text)
    problems = []
    if len(shown) != len(declared):
        problems.append(f"the layer table has {len(shown)} layers, LAYERS has {len(declared)}")
    for number, (row, layer) in enumerate(zip(shown, declared, strict=False)):
        if set(row) != set(layer):
            problems.append(f"layer {number}: the table says {sorted(row)}, LAYERS says {sorted(layer)}")
    return problems


@dataclass(frozen=True, order=True)
class ExtensionClass:
    name: str
    module: str
    order: int


def documented_extensions(text: str) -> set[ExtensionClass]:
    found = set()
    for row in table_rows(section(text, "Built-in extensions")):
        if len(row) < 3:
            continue
        order, name, module = row[0], row[1].strip("`"), row[2].strip("`")
        found.add(ExtensionClass(name, module, int(order) if order.isdigit() else -1))
    return found


def extension_subclasses(src: Path = SRC) -> dict[str, str]:
    """Every class under `src` that derives from `Extension`, directly or through another such class,
    with its module (read from the source, so nothing is missed for not being imported)."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src.parent).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                         for b in node.bases]
                classes[node.name] = (module, bases)
    derived = {"Extension"}
    changed = True
    while changed:
        changed = False
        for name, (_, bases) in classes.items():
            if name not in derived and derived.intersection(bases):
                derived.add(name)
                changed = True
    return {name: classes[name][0] for name in sorted(derived - {"Extension"})}


def extension_classes(src: Path = SRC) -> set[ExtensionClass]:
    """The extension classes with their order, read from the class itself (it may inherit it)."""
    return {ExtensionClass(name, module, getattr(importlib.import_module(module), name).order)
            for name, module in extension_subclasses(src).items()}


def extension_problems(text: str, in_code: set[ExtensionClass]) -> list[str]:
    shown = documented_extensions(text)
    problems = [f"not in the list of built-in extensions: {e.order} {e.name} ({e.module})" for e in sorted(in_code - shown)]
    problems += [f"listed but not in the code: {e.order} {e.name} ({e.module})" for e in sorted(shown - in_code)]
    return problems


# -- the README --------------------------------------------------------------------------------------
def readme_problems(text: str, root: Path = ROOT) -> list[str]:
    problems = []
    if len(text) > README_LIMIT:
        problems.append(f"README.md is {len(text):,} characters, more than {README_LIMIT:,}")
    head = text.split("\n## ", 1)[0]
    _, fences = split_fences(head)
    if len(fences) < 2:
        return [*problems, "README.md does not start with the two commands (two code blocks before the first section)"]
    demo, tests = fences[0].text, fences[1].text
    if "pip install -e ." not in demo or not demo.rstrip().endswith("nova demo"):
        problems.append("the first command must install Nova and run `nova demo`")
    if "pip install -e '.[dev]'" not in tests or "-m pytest" not in tests:
        problems.append("the second command must install the `dev` extra and run the tests")
    for script in re.findall(r"\.ci/[\w-]+", demo + tests):
        if not (root / script).is_file():
            problems.append(f"the commands run {script}, which does not exist")
    return problems


# -- the docs as they are ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tree() -> Node:
    return command_tree()


def test_the_command_tree_is_complete(tree: Node) -> None:
    # The walker must reach the lazily mounted groups, or every check below would pass vacuously.
    assert {"run", "serve", "sessions", "memory", "replay", "eval", "config"} <= set(tree.commands)
    assert "--window" in tree.commands["replay"].options
    assert "doctor" in tree.commands["sessions"].commands


def test_every_command_and_flag_in_the_docs_exists(tree: Node) -> None:
    problems = [p for page in pages() for p in
                command_problems(page.relative_to(ROOT).as_posix(), page.read_text(encoding="utf-8"), tree)]
    assert problems == []


def test_every_link_and_anchor_resolves() -> None:
    assert [p for page in pages() for p in link_problems(page, ROOT)] == []


def test_the_readme_links_every_docs_page() -> None:
    linked = {Path(t.partition("#")[0]).name for t in _LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))}
    assert {page.name for page in pages()[1:]} - linked == set()


def test_the_layer_table_is_the_declared_layers() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert layer_problems(text, declared_layers()) == []


def test_the_extension_list_is_the_extension_classes() -> None:
    in_code = extension_classes()
    assert len(in_code) >= 7  # the scan itself finds them
    assert extension_problems((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"), in_code) == []


def test_the_readme_is_an_entry() -> None:
    assert readme_problems((ROOT / "README.md").read_text(encoding="utf-8")) == []


# -- each checker fails on a broken page -------------------------------------------------------------
def test_an_unknown_command_or_flag_is_named_with_its_page(tree: Node) -> None:
    page = """# Try

```bash
nova sessions lst
nova replay x.jsonl --windw 3 && .venv/bin/nova run "hi" --json
```

Inline: `nova run --resume last --no-such-flag`, and `--nowhere` alone, `nova config show|sett`.
"""
    problems = command_problems("docs/try.md", page, tree)
    assert problems == [
        "docs/try.md: `nova sessions lst`: `nova sessions` has no command lst",
        "docs/try.md: `nova replay x.jsonl --windw 3`: `nova replay` has no option --windw",
        "docs/try.md: `nova run --resume last --no-such-flag`: `nova run` has no option --no-such-flag",
        "docs/try.md: `nova config show|sett`: `nova config` has no command sett",
        "docs/try.md: `--nowhere`: no nova command has the option --nowhere",
    ]


def test_a_flag_on_the_wrong_command_is_caught(tree: Node) -> None:
    # `--window` exists, but on `replay`; and a value-taking root option does not hide the command after it.
    problems = command_problems("p.md", "`nova --provider demo run --window 3`\n", tree)
    assert problems == ["p.md: `nova --provider demo run --window 3`: `nova run` has no option --window"]


def test_docs_notation_is_understood(tree: Node) -> None:
    page = ("`nova sessions doctor ID|--all [--json]`, `nova skills list|show|test [--json]`,\n"
            "`nova context [ID] [--why TEXT]`, `nova run --resume ID\\|last`, `nova --provider demo`,\n"
            "`nova.context.budget`, `pip install --no-deps x`, `nova memory undo [ID]`\n\n"
            "```bash\nexport NOVA_HOME=/tmp/x   # or --provider openai\nNOVA_MODEL=x nova run \"a;b\" --yes; nova rules --json\n```\n")
    assert command_problems("p.md", page, tree) == []
    assert command_problems("p.md", '`src/nova --anything`, `nova memory search "…" [--jsno]`', tree) == [
        "p.md: `nova memory search … [--jsno]`: `nova memory search` has no option --jsno"]


def test_a_missing_file_or_anchor_is_named(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A `code` heading: with (punctuation)\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text("# Top\n\n## Here\n\n"
                    "[ok](docs/other.md#a-code-heading-with-punctuation) [ok](#here) [web](https://example.com/x)\n"
                    "[gone](docs/gone.md) [bad](docs/other.md#nope) [self](#there) `[not a link](nope.md)`\n\n"
                    "```md\n[in code](nope.md)\n```\n", encoding="utf-8")
    assert link_problems(page, tmp_path) == [
        "README.md: link docs/gone.md: no file docs/gone.md",
        "README.md: link docs/other.md#nope: other.md has no heading #nope",
        "README.md: link #there: README.md has no heading #there",
    ]


def test_slugs_follow_github() -> None:
    assert slug("Measure a policy on your sessions: `nova eval`") == "measure-a-policy-on-your-sessions-nova-eval"
    assert slug("Nova on PostgreSQL (several workers)") == "nova-on-postgresql-several-workers"
    assert slug("Nova's own files") == "novas-own-files"
    assert slug("snake_case stays") == "snake_case-stays"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


ARCHITECTURE = """# Architecture

### Built-in extensions

| order | extension | module | what it does |
|---|---|---|---|
| 100 | `ContextController` | `nova.context.controller` | compaction |

## Layers

| layer | packages | what lives there |
|---|---|---|
| 0 | `nova.messages`, `nova.model` | values |
| 1 | `nova.tokens` | tokens |
"""


def test_a_layer_table_that_differs_from_layers_is_caught() -> None:
    assert layer_problems(ARCHITECTURE, [("nova.model", "nova.messages"), ("nova.tokens",)]) == []
    assert layer_problems(ARCHITECTURE, [("nova.messages", "nova.model", "nova.errors"), ("nova.tokens",)]) == [
        "layer 0: the table says ['nova.messages', 'nova.model'], LAYERS says ['nova.errors', 'nova.messages', 'nova.model']"]
    assert layer_problems(ARCHITECTURE, [("nova.messages", "nova.model"), ("nova.tokens",), ("nova.cli",)]) == [
        "the layer table has 2 layers, LAYERS has 3"]


def test_an_extension_list_that_differs_from_the_code_is_caught() -> None:
    controller = ExtensionClass("ContextController", "nova.context.controller", 100)
    assert extension_problems(ARCHITECTURE, {controller}) == []
    cache = ExtensionClass("PromptCache", "nova.context.prompt_cache", 300)
    assert extension_problems(ARCHITECTURE, {controller, cache}) == [
        "not in the list of built-in extensions: 300 PromptCache (nova.context.prompt_cache)"]
    moved = ExtensionClass("ContextController", "nova.context.controller", 150)
    assert extension_problems(ARCHITECTURE, {moved}) == [
        "not in the list of built-in extensions: 150 ContextController (nova.context.controller)",
        "listed but not in the code: 100 ContextController (nova.context.controller)"]


def test_the_scan_finds_indirect_extension_subclasses(tmp_path: Path) -> None:
    package = tmp_path / "nova"
    (package / "deep").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "deep" / "__init__.py").write_text("", encoding="utf-8")
    (package / "deep" / "base.py").write_text("from nova.context.extensions import Extension\n"
                                              "class Base(Extension):\n    order = 10\n", encoding="utf-8")
    (package / "deep" / "leaf.py").write_text("from nova.deep.base import Base\nclass Leaf(Base):\n    pass\n",
                                              encoding="utf-8")
    (package / "deep" / "other.py").write_text("class Unrelated:\n    pass\n", encoding="utf-8")
    assert extension_subclasses(package) == {"Base": "nova.deep.base", "Leaf": "nova.deep.leaf"}


def test_a_readme_that_is_not_an_entry_is_caught(tmp_path: Path) -> None:
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "test-deps").write_text("", encoding="utf-8")
    good = ("# Nova\n\n```bash\npip install -e . && nova demo\n```\n\n"
            "```bash\npip install -e '.[dev]' && bash .ci/test-deps && python -m pytest -n 2\n```\n\n## What\n")
    assert readme_problems(good, tmp_path) == []
    assert readme_problems(good + "x" * README_LIMIT, tmp_path) == [
        f"README.md is {len(good) + README_LIMIT:,} characters, more than {README_LIMIT:,}"]
    assert readme_problems("# Nova\n\n## What\n\n```bash\nnova demo\n```\n", tmp_path) == [
        "README.md does not start with the two commands (two code blocks before the first section)"]
    swapped = good.replace("nova demo", "nova run x").replace(".ci/test-deps", ".ci/gone")
    assert readme_problems(swapped, tmp_path) == [
        "the first command must install Nova and run `nova demo`",
        "the commands run .ci/gone, which does not exist"]
