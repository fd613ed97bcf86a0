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

Targets: at 200k, Nova's hit rate >= 97 % and cost <= 1.02x naive-cached; at 64k, Nova's cost <= 0.4x
truncate and <= 0.7x observation-mask, with hit rate >= 85 %. The last line is one JSON object keyed by
window, then policy.

    python benchmarks/cache_cost.py [--quick]
"""

from __future__ import annotations

import json
import logging
import sys
import time

from nova.evaluation.replay import ALL_POLICIES, replay_messages
from nova.sessions.importers import read_session_file
from nova.testing import mini_swe_trajectories, shared_data_dir
from nova.tokens import counter_for_model

WINDOWS = (200_000, 64_000)
PRICE_MODEL = "claude-sonnet-4-5"


def targets(window: int, rows: dict[str, dict[str, float]]) -> tuple[bool, str]:
    nova = rows["nova"]
    if window >= 200_000:
        vs = nova["cost_usd"] / rows["naive-cached"]["cost_usd"]
        ok = nova["cache_hit_rate"] >= 0.97 and vs <= 1.02
        return ok, f"hit rate {nova['cache_hit_rate']:.1%} (>= 97%), cost {vs:.3f}x naive-cached (<= 1.02x)"
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
    print(f"\n({time.monotonic() - started:.1f}s; agent output is the same under every policy and is not in "
          "the cost column)")
    print(json.dumps(results, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
