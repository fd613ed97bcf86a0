"""Skills and sub-agents benchmark: what the skill index costs per call against bodies always loaded, and
how much of a forked sub-agent's first request its parent's prompt cache already holds.

Setup (real agent assembly, scripted model, real files): a project with 24 skills in Claude Code's
format (bodies of about 1,500 tokens, as ecosystem skills run); a parent session reads six of Nova's own
source files, then delegates one sub-task, once in fork mode and once in isolated mode.

- Skills: tokens of the index (always in the system text) against the tokens of every body, which is
  what each call would carry if skills were loaded up front. Target: index <= 0.1x all bodies.
- Sub-agents: every request (parent's and child's) goes through one simulated automatic prefix cache
  (`nova.context.cache_sim.OpenAICache`, the provider's cache shared by requests with the same prefix).
  The share of the child's first request read from cache, fork against isolated. Target: fork >= 0.9.

Last line: {"skill_index_tokens_ratio", "fork_first_call_cached_share", "isolated_first_call_cached_share"}.

    python benchmarks/subagents.py
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

from nova.agent.builder import AgentOptions, build_agent
from nova.context.cache_sim import Block, OpenAICache
from nova.messages import to_dict
from nova.model import ModelRequest
from nova.settings import load_settings
from nova.skills.catalog import load_catalog
from nova.testing import ScriptedProvider, call, reply
from nova.tokens import counter_for_model

SKILLS = 24
SOURCES = ["agent/loop.py", "context/compiler.py", "agent/context_runtime.py", "tools/permissions.py", "agent/builder.py",
           "sessions/session.py"]
COUNTER = counter_for_model("claude-sonnet-4-5")


def _skill(index: int) -> str:
    steps = "\n".join(f"{n}. Step {n} of procedure {index}: check the inputs, run the tool, compare the output "
                      f"with the expected table, and write down every difference with its file and line."
                      for n in range(1, 60))
    return (f"---\nname: procedure-{index:02d}\ndescription: Procedure {index} for reviewing changes of kind "
            f"{index}; use when the user asks for a kind-{index} review.\nallowed-tools: Read, Grep, Bash\n---\n"
            f"# Procedure {index}\n\n{steps}\n")


def _project(root: Path) -> Path:
    work = root / "repo"
    (work / ".git").mkdir(parents=True)
    src = Path(__file__).resolve().parents[1] / "src" / "nova"
    for name in SOURCES:
        target = work / "src" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((src / name).read_text(encoding="utf-8"), encoding="utf-8")
    for index in range(SKILLS):
        folder = work / ".claude" / "skills" / f"procedure-{index:02d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(_skill(index), encoding="utf-8")
    return work


def _blocks(request: ModelRequest) -> list[Block]:
    def block(text: str) -> Block:
        return Block(digest=hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(),
                     tokens=COUNTER.count(text))

    tools = json.dumps([[t.name, t.description, dict(t.input_schema)] for t in request.tools], sort_keys=True)
    return [block(tools), block(request.system),
            *(block(json.dumps(to_dict(m), sort_keys=True)) for m in request.messages)]


def _run(work: Path, home: Path, mode: str) -> tuple[float, int]:
    """(cached share of the child's first request, its tokens) with one shared simulated cache."""
    script = [reply(f"reading {name}", [call("read_file", path=f"src/{name}")]) for name in SOURCES]
    script += [reply("delegating", [call("task", id=f"toolu_{mode}", prompt="review the loop for races", mode=mode)]),
               reply("The loop has no race: tools run in order, sub-agents on their own threads."),
               reply("done")]
    provider = ScriptedProvider(script)
    settings = load_settings(home=home, overrides={"provider": "demo", "context_window": 200_000})
    agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True))
    agent.run_turn("review src/ for concurrency problems")
    cache = OpenAICache()
    child_index = len(SOURCES) + 1
    share, tokens = 0.0, 0
    for index, request in enumerate(provider.requests):
        blocks = _blocks(request)
        usage = cache.call(blocks, head=2, at=None)
        if index == child_index:
            tokens = usage.input_tokens + usage.cache_read_tokens
            share = usage.cache_read_tokens / tokens if tokens else 0.0
    agent.close()
    return share, tokens


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="nova-bench-subagents-") as tmp:
        root = Path(tmp)
        work = _project(root)
        catalog = load_catalog(cwd=work, home=root / "home")
        index_tokens = COUNTER.count(catalog.index_text())
        bodies_tokens = sum(COUNTER.count(s.body) for s in catalog.sorted())
        fork_share, fork_tokens = _run(work, root / "home-fork", "fork")
        iso_share, iso_tokens = _run(work, root / "home-iso", "isolated")
    ratio = index_tokens / bodies_tokens
    print(f"skills: {SKILLS} in Claude Code's format")
    print(f"  index, every call          {index_tokens:>8,} tokens")
    print(f"  all bodies, every call     {bodies_tokens:>8,} tokens   (baseline: skills loaded up front)")
    print(f"  ratio                      {ratio:>8.3f}x        target <= 0.1")
    print("sub-agent's first request, one shared prefix cache:")
    print(f"  fork      {fork_tokens:>8,} tokens, {fork_share:6.1%} read from the parent's cache, "
          f"{round(fork_tokens * (1 - fork_share)):,} uncached   target >= 90%")
    print(f"  isolated  {iso_tokens:>8,} tokens, {iso_share:6.1%} read from cache, {round(iso_tokens * (1 - iso_share)):,} "
          "uncached (baseline: its own tool subset and brief share no prefix)")
    met = ratio <= 0.1 and fork_share >= 0.9
    print("targets: " + ("met" if met else "MISSED"))
    print(json.dumps({"skill_index_tokens_ratio": round(ratio, 4),
                      "fork_first_call_cached_share": round(fork_share, 4),
                      "isolated_first_call_cached_share": round(iso_share, 4)}))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
