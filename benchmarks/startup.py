"""CLI start-up benchmark: `nova --help`, `nova --version` and `nova sessions list --json` against
`python -c "import typer"`, each a fresh process.

    python benchmarks/startup.py [--runs 10]

Every command runs in a subprocess of this same Python executable: `nova` is the console script next
to it, run as `python <script>` (or `python -m nova.cli.main` when no script is installed; the table says
which). `sessions list` reads an empty NOVA_HOME in a temp dir. Bytecode is cached (in a temp dir),
as for an installed package. The runs are interleaved (one of each
per round, after one warm-up round) so that load on the machine hits every command alike; each figure
is the median of `--runs` rounds. The ratios (and the target: each command within 2x the typer import)
use the CPU time of the child process, which other work on a shared machine disturbs far less than
the wall time; the wall times and their ratios are printed beside them.

The last line printed is one JSON object: {"help_ratio", "version_ratio", "list_ratio"}.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 2.0


def nova_command() -> tuple[list[str], str]:
    script = shutil.which("nova", path=str(Path(sys.executable).parent))
    if script:
        return [sys.executable, script], f"{Path(sys.executable).name} {script}"
    return [sys.executable, "-m", "nova.cli.main"], f"{Path(sys.executable).name} -m nova.cli.main"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    nova, how = nova_command()
    home = Path(tempfile.mkdtemp(prefix="nova-bench-home-"))
    pycache = Path(tempfile.mkdtemp(prefix="nova-bench-pycache-"))
    # Bytecode cached, as in an installed package: with PYTHONDONTWRITEBYTECODE set every run would
    # compile nova's sources again while typer's bytecode sits in site-packages. The warm-up round
    # fills a private cache for every command alike.
    env = {**os.environ, "NOVA_HOME": str(home), "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cases = {
        "baseline": [sys.executable, "-c", "import typer"],
        "help": [*nova, "--help"],
        "version": [*nova, "--version"],
        "list": [*nova, "sessions", "list", "--json"],
    }
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    try:
        for round_ in range(args.runs + 1):
            for name, argv in cases.items():
                elapsed, used, out = timed(argv, env)
                if round_ == 0:  # warm-up: bytecode caches written, and a check that each did its job
                    expected = {"help": "sessions", "version": "nova ", "list": "[]"}.get(name)
                    if expected is not None and expected not in out:
                        raise SystemExit(f"{name}: unexpected output {out[:200]!r}")
                    continue
                wall[name].append(elapsed)
                cpu[name].append(used)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(pycache, ignore_errors=True)

    wall_ms = {name: statistics.median(values) * 1000 for name, values in wall.items()}
    cpu_ms = {name: statistics.median(values) * 1000 for name, values in cpu.items()}
    ratios = {name: cpu_ms[name] / cpu_ms["baseline"] for name in ("help", "version", "list")}
    wall_ratios = {name: wall_ms[name] / wall_ms["baseline"] for name in ("help", "version", "list")}
    labels = {
        "baseline": 'python -c "import typer"',
        "help": "nova --help",
        "version": "nova --version",
        "list": "nova sessions list --json (empty home)",
    }
    print(f"nova run as: {how}; median of {args.runs} interleaved runs each")
    width = max(len(label) for label in labels.values())
    print(f"{'command':<{width}}  {'cpu ms':>7}  {'ratio':>6}  {'wall ms':>7}  {'ratio':>6}  target (cpu ratio)")
    for name, label in labels.items():
        if name == "baseline":
            print(f"{label:<{width}}  {cpu_ms[name]:>7.1f}  {1.0:>6.2f}  {wall_ms[name]:>7.1f}  {1.0:>6.2f}")
            continue
        mark = "ok" if ratios[name] <= TARGET_RATIO else "MISSED"
        print(f"{label:<{width}}  {cpu_ms[name]:>7.1f}  {ratios[name]:>6.2f}  {wall_ms[name]:>7.1f}  "
              f"{wall_ratios[name]:>6.2f}  <= {TARGET_RATIO:.1f} {mark}")
    missed = [name for name, ratio in ratios.items() if ratio > TARGET_RATIO]
    print(json.dumps({"help_ratio": round(ratios["help"], 3), "version_ratio": round(ratios["version"], 3),
                      "list_ratio": round(ratios["list"], 3)}))
    if missed:
        sys.exit(1)

if __name__ == "__main__":
    main()
