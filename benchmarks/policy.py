"""Permission benchmark: the time of one bash permission decision, parser and all.

    python benchmarks/policy.py [--lines 10000] [--seed 12]

10,000 command lines are generated (seeded): two thirds the everyday kind (`ls -la src`, `git status`,
`pytest -q tests/x.py`, `grep -rn x src | head`), the rest compound (pipelines, lists, subshells, command
and process substitutions, `bash -c`, wrappers, heredocs writing a file, loops, lines of a few KB). Each
is decided by the real `PermissionPolicy.check` (realistic allow and deny rules, protected paths) and,
in the same run and taking turns line by line, by the baseline: the check a careful user would write with `shlex` (split the line into
sub-commands at `;`, `&&`, `||`, `|`, `&`, then deny if any matches a deny pattern, allow if all match
an allow pattern). Each line keeps its best wall time of `--repeats` passes. The table compares the two;
the target is p99 < 5 ms per decision.

The last line printed is one JSON object: {"decisions_per_s": ..., "p99_ms": ...}.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import random
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from nova.settings import PermissionsConfig
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy, ProtectedPaths

P99_TARGET_MS = 5.0
ALLOW = ("bash(ls*)", "bash(git status*)", "bash(git diff*)", "bash(git log*)", "bash(pytest*)",
         "bash(grep *)", "bash(cat *)", "bash(echo*)", "bash(head*)", "bash(wc*)", "bash(python -m pytest*)")
DENY = ("bash(git push*)", "bash(rm -rf*)", "bash(curl*)", "bash(sudo*)")
BASE_ALLOW = tuple(rule[5:-1] for rule in ALLOW)
BASE_DENY = tuple(rule[5:-1] for rule in DENY)

FILES = ["src/app.py", "src/nova/agent/loop.py", "tests/test_x.py", "README.md", "setup.cfg", "docs/index.md",
         "pkg/__init__.py", "build/out.log", "\"my file.txt\"", "'it''s.md'"]
WORDS = ["foo", "TODO", "def main", "import os", "error", "class Config", "x=1", "$HOME", "'a b'", "\"c d\""]
SIMPLE = [
    lambda r: f"ls -la {r.choice(['', 'src', 'tests', '..', '~/proj'])}",
    lambda r: "git status",
    lambda r: f"git status --short {r.choice(['', '-b', '--porcelain'])}",
    lambda r: f"git diff {r.choice(['', '--stat', 'HEAD~1', '--cached'])} {r.choice(FILES)}",
    lambda r: f"git log --oneline -{r.randint(1, 30)}",
    lambda r: f"pytest -q {r.choice(FILES)} -k {r.choice(['test_a', 'slow', 'not net'])!r}",
    lambda r: f"python -m pytest -x -q tests/ --timeout={r.randint(10, 300)}",
    lambda r: f"grep -rn {shlex.quote(r.choice(WORDS))} {r.choice(['src', 'tests', '.'])}",
    lambda r: f"cat {r.choice(FILES)}",
    lambda r: f"head -n {r.randint(5, 200)} {r.choice(FILES)}",
    lambda r: f"wc -l {' '.join(r.sample(FILES, 3))}",
    lambda r: f"echo {shlex.quote(r.choice(WORDS))}",
    lambda r: f"git push origin {r.choice(['main', 'feature/x', 'HEAD'])}",
    lambda r: f"rm -rf {r.choice(['build', 'dist', '.pytest_cache'])}",
    lambda r: f"make -j{r.randint(1, 8)} {r.choice(['', 'test', 'lint'])}",
    lambda r: f"npm {r.choice(['test', 'run build', 'ci'])}",
]
WRAPPERS = ["timeout 60", "nice -n 10", "env PYTHONPATH=src", "stdbuf -oL", "command", "time", "ionice -c3"]


def compound(r: random.Random, depth: int = 0) -> str:
    simple = r.choice(SIMPLE)(r)
    if depth >= 2:
        return simple
    inner = compound(r, depth + 1)
    kind = r.randrange(14)
    if kind == 0:
        return f"{simple} | {r.choice(['head -20', 'grep -v x', 'sort | uniq -c', 'tee out.log'])}"
    if kind == 1:
        return f"cd {r.choice(['src', 'tests', '/tmp/x'])} && {inner}"
    if kind == 2:
        return f"{simple} 2>&1 | tail -n {r.randint(5, 50)}; echo \"exit=$?\""
    if kind == 3:
        return f"({inner}) > {r.choice(['out.txt', '/dev/null', 'logs/run.log'])} 2>&1"
    if kind == 4:
        return f"echo \"result: $({inner})\""
    if kind == 5:
        return f"diff <({simple}) <({inner})"
    if kind == 6:
        return f"bash -c {shlex.quote(inner)}"
    if kind == 7:
        return f"{r.choice(WRAPPERS)} {inner}"
    if kind == 8:
        return f"for f in $(ls {r.choice(['src', 'tests'])}); do {inner}; done"
    if kind == 9:
        body = "\n".join(f"    line {i} = {r.choice(WORDS)!r}  # {r.choice(WORDS)}" for i in range(r.randint(5, 120)))
        return f"cat > {r.choice(['gen.py', 'notes.md', 'config.yml'])} <<'EOF'\n{body}\nEOF\n{inner}"
    if kind == 10:
        return f"if {simple}; then {inner}; else echo failed >&2; fi"
    if kind == 11:
        return "python - <<EOF\nimport sys\nprint(sys.version)  # $(date)\nEOF"
    if kind == 12:
        return " && ".join(r.choice(SIMPLE)(r) for _ in range(r.randint(3, 12)))
    return f"{simple} # {r.choice(WORDS)}; {inner}"


def generate(n: int, seed: int) -> list[str]:
    r = random.Random(seed)
    return [r.choice(SIMPLE)(r) if r.random() < 2 / 3 else compound(r) for _ in range(n)]


def baseline_check(command: str, allow: tuple[str, ...], deny: tuple[str, ...]) -> str:
    """What a careful user writes with shlex: sub-commands at the separators, patterns on each."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return "ask"
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token in (";", "&&", "||", "|", "&", ";;", "|&"):
            parts.append([])
        else:
            parts[-1].append(token)
    commands = [" ".join(p) for p in parts if p]
    if any(fnmatch.fnmatchcase(c, d) for c in commands for d in deny):
        return "deny"
    if commands and all(any(fnmatch.fnmatchcase(c, a) for a in allow) for c in commands):
        return "allow"
    return "ask"


def time_both(deciders: list[Callable[[str], object]], lines: list[str], repeats: int) -> list[list[float]]:
    """Per decider, each line's best wall time over `repeats` passes. The deciders take turns on every line,
    so a busy machine slows both alike, and the best of a few passes leaves out moments the process was
    not running at all (the machine running this is shared)."""
    best = [[float("inf")] * len(lines) for _ in deciders]
    for _ in range(repeats):
        for i, line in enumerate(lines):
            for times, decide in zip(best, deciders, strict=True):
                start = time.perf_counter()
                decide(line)
                elapsed = time.perf_counter() - start
                if elapsed < times[i]:
                    times[i] = elapsed
    return best


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3, help="passes over the lines; each line keeps its best")
    args = parser.parse_args()

    lines = generate(args.lines, args.seed)
    cwd = Path("/tmp/nova-bench-project")
    protected = ProtectedPaths(dirs=(Path.home() / ".nova", cwd / ".nova"),
                               names=frozenset({"NOVA.md", "AGENTS.md", "CLAUDE.md"}))
    policy = PermissionPolicy(PermissionsConfig(allow=ALLOW, deny=DENY), interactive=False, cwd=cwd,
                              protected=protected)
    bash = default_registry().get("bash")
    assert bash is not None

    start = time.perf_counter()
    policy.check(bash, {"command": "true"})  # loads the grammar once, as the first call of a session does
    first_ms = (time.perf_counter() - start) * 1000

    def nova(line: str) -> object:
        return policy.check(bash, {"command": line})

    def base(line: str) -> object:
        return baseline_check(line, BASE_ALLOW, BASE_DENY)

    nova_times, base_times = time_both([nova, base], lines, args.repeats)
    outcomes = {"allow": 0, "deny": 0, "ask": 0}
    base_outcomes = {"allow": 0, "deny": 0, "ask": 0}
    base_only_allows = 0
    for line in lines:
        ours = policy.evaluate(bash, {"command": line}).outcome
        theirs = baseline_check(line, BASE_ALLOW, BASE_DENY)
        outcomes[ours] += 1
        base_outcomes[theirs] += 1
        base_only_allows += theirs == "allow" and ours != "allow"

    def row(name: str, times: list[float]) -> tuple[str, float, float, float, float]:
        return (name, len(times) / sum(times), statistics.median(times) * 1000, percentile(times, 0.99) * 1000,
                max(times) * 1000)

    rows = [row("Nova PermissionPolicy.check (tree-sitter)", nova_times), row("baseline: shlex + fnmatch", base_times)]
    width = max(len(r[0]) for r in rows)
    sizes = sorted(len(line) for line in lines)
    print(f"{len(lines):,} command lines (seed {args.seed}), {sizes[len(sizes) // 2]} chars median, "
          f"{sizes[-1]:,} max; first call (grammar load) {first_ms:.1f} ms; best of {args.repeats} passes per line")
    print(f"{'decider':<{width}}  {'decisions/s':>12}  {'p50 ms':>8}  {'p99 ms':>8}  {'max ms':>8}")
    for name, rate, p50, p99, worst in rows:
        print(f"{name:<{width}}  {rate:>12,.0f}  {p50:>8.3f}  {p99:>8.3f}  {worst:>8.3f}")
    nova_p99, base_p99 = rows[0][3], rows[1][3]
    print(f"ratio Nova/baseline: p99 {nova_p99 / base_p99:.2f}x, throughput {rows[1][1] / rows[0][1]:.2f}x slower")
    print(f"outcomes  Nova: {outcomes}  baseline: {base_outcomes}; the baseline allows {base_only_allows} "
          "lines Nova does not (commands it cannot see)")
    met = nova_p99 < P99_TARGET_MS
    print(f"target p99 < {P99_TARGET_MS} ms: {'met' if met else 'MISSED'}")
    print(json.dumps({"decisions_per_s": round(rows[0][1], 1), "p99_ms": round(nova_p99, 3)}))
    if not met:
        sys.exit(1)


if __name__ == "__main__":
    main()
