"""Prompt-cache cost benchmark: 20 real trajectories x windows 200k and 64k x six context policies.

Every trajectory is replayed (`nova.evaluation.replay.replay_messages`) through the simulated Anthropic prompt cache
(`nova.context.cache_sim.AnthropicCache`: breakpoints after the system text and at the last user
message, 5-minute TTL at the recorded call times, 20-block lookback), priced at Claude Sonnet 4.5 rates,
with `--summarizer model-estimate`: each Nova compaction also pays the call a model summarizer would make
(the view as last sent plus the instruction, reading the cached prefix, answering with a summary the size
of the extractive one).

Cost here is what the context policy controls: input tokens (uncached, cache writes, cache reads) plus
every summary call, input and output. The agent's own output tokens are the same under every policy;
they are printed apart. Cache hit rate = cache read / (uncached + cache read + cache write), summary
calls included. Token counts use the Gemini heuristic profile (the runs are Gemini 3 Pro).

`post_compaction_hit_rate`: the share of input read from the cache on calls 2..N after each compaction
(the first call after one rewrites the cache; the ones after it should read it), for Nova, under the
Anthropic breakpoint model and the OpenAI prefix model (`nova.context.cache_sim`) as the models say
(uncalibrated: `replay_messages(calibrate=False)`), on the shared runs at 64k and 200k and in `nova demo`
(its real requests, run offline through both models).

Targets: at 200k, Nova's cost <= 1.02x naive-cached with hit rate >= 85 % (it was >= 97 % while Nova
never compacted below the window: compaction timed by cost now folds long runs at 200k when that is
cheaper, and each compaction rewrites the cache once, so the overall rate falls as the cost does; what
must hold after a compaction is the post-compaction rate below); at 64k, Nova's cost <= 0.4x
truncate and <= 0.7x observation-mask, with hit rate >= 85 %; `post_compaction_hit_rate` >= 0.9 in every
place it is measured. The last line is one JSON object keyed by window, then policy, with
`post_compaction_hit_rate` beside them (by place, then cache model) and `post_compaction_hit_rate_min`.

    python benchmarks/cache_cost.py [--quick]
"""

from __future__ import annotations

import json
import logging
import sys
import time

from nova.context.cache_sim import AnthropicCache, OpenAICache, hit_rate, post_compaction_usage, request_usage
from nova.evaluation.replay import ALL_POLICIES, ReplayReport, replay_messages
from nova.model import Usage
from nova.sessions.importers import read_session_file
from nova.testing import mini_swe_trajectories, shared_data_dir
from nova.tokens import counter_for_model

WINDOWS = (200_000, 64_000)
PRICE_MODEL = "claude-sonnet-4-5"
POST_COMPACTION_TARGET = 0.9


def after_compactions(report: ReplayReport) -> Usage:
    return post_compaction_usage([(c.event == "compaction", c.cache) for c in report.per_call])


def demo_post_compaction() -> dict[str, float | None]:
    """`nova demo` as a user runs it (scripted model, real tools), its requests then sent through both
    cache models: calls 2..N after each compaction (a compaction is a new summary in the request)."""
    import os
    import tempfile
    from pathlib import Path

    from nova.agent.builder import AgentOptions
    from nova.agent.demo import DEMO_PROMPT, make_demo_project, make_demo_provider
    from nova.cli.commands.cli_settings import settings_from_cli
    from nova.cli.commands.run import run_task
    from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

    with tempfile.TemporaryDirectory(prefix="nova-cache-cost-") as tmp:
        os.environ["NOVA_HOME"] = str(Path(tmp) / "home")
        settings = settings_from_cli(provider="demo", model="nova-demo")
        project = make_demo_project(Path(tmp) / "project")
        provider = make_demo_provider()
        run_task(settings, provider, AgentOptions(cwd=project, yes=True, max_steps=20), DEMO_PROMPT, quiet=True)
    counter = HeuristicCounter(CL100K_PROFILE)
    out: dict[str, float | None] = {}
    for name, cache in (("anthropic", AnthropicCache()), ("openai", OpenAICache())):
        calls: list[tuple[bool, Usage]] = []
        summaries: set[str] = set()
        for request in provider.requests:
            now = {m.id for m in request.messages if m.origin == "summary"}
            calls.append((bool(now - summaries), request_usage(cache, request, counter)))
            summaries |= now
        out[name] = hit_rate(post_compaction_usage(calls))
    return out


def targets(window: int, rows: dict[str, dict[str, float]]) -> tuple[bool, str]:
    nova = rows["nova"]
    if window >= 200_000:
        vs = nova["cost_usd"] / rows["naive-cached"]["cost_usd"]
        ok = nova["cache_hit_rate"] >= 0.85 and vs <= 1.02
        return ok, f"hit rate {nova['cache_hit_rate']:.1%} (>= 85%), cost {vs:.3f}x naive-cached (<= 1.02x)"
    vs_trunc = nova["cost_usd"] / rows["truncate"]["cost_usd"]
    vs_mask = nova["cost_usd"] / rows["observation-mask"]["cost_usd"]
    ok = vs_trunc <= 0.4 and vs_mask <= 0.7 and nova["cache_hit_rate"] >= 0.85
    return ok, (f"cost {vs_trunc:.3f}x truncate (<= 0.4x), {vs_mask:.3f}x observation-mask (<= 0.7x), "
                f"hit rate {nova['cache_hit_rate']:.1%} (>= 85%)")


def main(argv: list[str]) -> int:
    logging.getLogger("nova.agent").setLevel(logging.ERROR)
    files = mini_swe_trajectories()
    if not files:
        print(f"no trajectories under {shared_data_dir()}; set NOVA_SHARED_DATA", file=sys.stderr)
        return 1
    if "--quick" in argv:
        files = files[:4]
    counter = counter_for_model("gemini-3-pro")
    sessions = [read_session_file(f) for f in files]
    results: dict[str, dict[str, dict[str, float]]] = {}
    started = time.monotonic()
    verdicts: list[bool] = []
    post: dict[str, dict[str, float | None]] = {"demo": demo_post_compaction()}
    for window in WINDOWS:
        print(f"\nwindow {window:,} ({len(files)} trajectories, Anthropic cache, {PRICE_MODEL} prices, "
              "summarizer model-estimate)")
        print(f"  {'policy':<17}{'cost $':>10}{'vs uncached':>12}{'hit rate':>10}{'read':>12}{'written':>11}"
              f"{'uncached':>11}{'summaries':>10}{'agent out $':>12}")
        rows: dict[str, dict[str, float]] = {}
        for policy in ALL_POLICIES:
            tot = dict(cost=0.0, out=0.0, read=0, write=0, uncached=0, summaries=0)
            for session in sessions:
                report = replay_messages(session.messages, system=session.system, window=window, policy=policy,
                                         counter=counter, provider_cache="anthropic", summarizer_estimate=True,
                                         price_model=PRICE_MODEL)
                tot["cost"] += report.cost_usd or 0.0
                tot["out"] += report.output_cost_usd or 0.0
                tot["read"] += report.cache_read_tokens
                tot["write"] += report.cache_write_tokens
                tot["uncached"] += report.uncached_input_tokens
                tot["summaries"] += report.summary_calls
            seen = tot["read"] + tot["write"] + tot["uncached"]
            rows[policy] = {"cost_usd": tot["cost"], "cache_hit_rate": tot["read"] / seen if seen else 0.0,
                            "agent_output_usd": tot["out"], **{k: tot[k] for k in ("read", "write", "uncached",
                                                                                    "summaries")}}
        for model in ("anthropic", "openai"):
            total = Usage()
            for session in sessions:
                # The cache as its model says: the Gemini runs' recorded cache is a prefix cache, and the
                # calibration to its real best-effort hits would scale every read alike (86.6 % instead of
                # 93 %), a property of that provider, not of whether Nova's prefix survives.
                report = replay_messages(session.messages, system=session.system, window=window, policy="nova",
                                         counter=counter, provider_cache=model, summarizer_estimate=True,
                                         price_model=PRICE_MODEL, calibrate=False)
                total = total + after_compactions(report)
            post.setdefault(str(window), {})[model] = hit_rate(total)
        base = rows["naive-uncached"]["cost_usd"] or 1.0
        results[str(window)] = {}
        for policy, row in rows.items():
            results[str(window)][policy] = {
                "cost_usd": round(row["cost_usd"], 4),
                "cost_vs_naive_uncached": round(row["cost_usd"] / base, 4),
                "cache_hit_rate": round(row["cache_hit_rate"], 4),
            }
            print(f"  {policy:<17}{row['cost_usd']:>10.2f}{row['cost_usd'] / base:>11.3f}x"
                  f"{row['cache_hit_rate']:>10.1%}{int(row['read']):>12,}{int(row['write']):>11,}"
                  f"{int(row['uncached']):>11,}{int(row['summaries']):>10}{row['agent_output_usd']:>12.2f}")
        ok, detail = targets(window, rows)
        verdicts.append(ok)
        print(f"  target: {'met' if ok else 'MISSED'} — {detail}")
    print("\npost-compaction hit rate (calls 2..N after each compaction, Nova)")
    measured = [rate for by_model in post.values() for rate in by_model.values() if rate is not None]
    for place, by_model in post.items():
        figures = "  ".join(f"{model} {'-' if rate is None else f'{rate:.1%}'}" for model, rate in by_model.items())
        print(f"  {place:<8}{figures}")
    post_ok = bool(measured) and min(measured) >= POST_COMPACTION_TARGET
    verdicts.append(post_ok)
    print(f"  target: {'met' if post_ok else 'MISSED'} — lowest {min(measured, default=0.0):.1%} "
          f"(>= {POST_COMPACTION_TARGET:.0%}; '-': no compaction there)")
    results["post_compaction_hit_rate"] = {place: {m: None if r is None else round(r, 4) for m, r in by_model.items()}
                                           for place, by_model in post.items()}  # type: ignore[assignment]
    results["post_compaction_hit_rate_min"] = round(min(measured, default=0.0), 4)  # type: ignore[assignment]
    print(f"\n({time.monotonic() - started:.1f}s; agent output is the same under every policy and is not in "
          "the cost column)")
    print(json.dumps(results, sort_keys=True))
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
