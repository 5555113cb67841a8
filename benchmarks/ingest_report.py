"""The ingest benchmark's tables and its verdict against the issue's goals."""

from __future__ import annotations

from typing import Any

__all__ = ["goals", "print_report"]

RATIO_GOAL = 0.50  # ingest with evaluation off, per CPU-second, against parse+walk
DEFAULTS_GOAL = 20_000  # spans per CPU-second with the embedded defaults
RSS_GOAL_MIB = 512  # with 128 KiB turns on the default config

# "ingest" divides by the CPU of the sidecar's whole process tree (a worker process included);
# "serving" by the serving process's own CPU (utime + stime, children excluded).
COLUMNS = ("case", "run", "anchor k/CPU-s", "ingest k/CPU-s", "ratio", "serving k/CPU-s", "k spans/s wall",
           "sidecar cores", "peak RSS MiB", "traces evicted", "convs sent", "convs closed", "sampler evicted", "turns evaluated",
           "eval dropped", "/healthz p50/p99/max ms", "/metrics p50/p99/max ms")


def _lat(s: dict[str, Any]) -> str:
    if not s.get("count"):
        return "-"
    fail = f" ({s['failures']} failed)" if s["failures"] else ""
    return f"{s['p50_ms']:.0f}/{s['p99_ms']:.0f}/{s['max_ms']:.0f}{fail}"


def _closed(d: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:,.0f}" for k, v in sorted(d.items())) or "0"


def row(r: dict[str, Any]) -> tuple[str, ...]:
    p = r["pipeline"]
    return (
        r["name"], str(r["repeat"]), f"{r['anchor_spans_per_cpu_s'] / 1e3:.0f}",
        f"{r['ingest_spans_per_cpu_s'] / 1e3:.1f}", f"{r['ratio_to_anchor']:.1%}",
        f"{r['ingest_spans_per_cpu_s_serving_process'] / 1e3:.1f}",
        f"{r['spans_per_wall_s_during_load'] / 1e3:.1f}", f"{r['sidecar_cores_during_load']:.2f}",
        f"{r['peak_rss_mib']:.0f}" + (f" (+{r['peak_rss_mib_tree'] - r['peak_rss_mib']:.0f})"
                                      if r["peak_rss_mib_tree"] > r["peak_rss_mib"] else ""),
        f"{sum(p['traces_evicted'].values()):,.0f}", f"{r['conversations_sent']:,}",
        _closed(p["conversations_closed"]), f"{p['sampler_cache_evicted']:,.0f}",
        f"{p['turns_evaluated']:,.0f} ({p['turns_evaluated'] / max(1.0, p['turns_assembled']):.1%})", f"{p['queue_dropped'].get('evaluation', 0):,.0f}",
        _lat(r["healthz"]), _lat(r["metrics"]),
    )


def goals(runs: list[dict[str, Any]]) -> list[str]:
    """One line per goal of the issue that these runs can speak to: met or not, with the figures."""
    out = []

    def span(rs: list[dict[str, Any]], key: str, fmt: str) -> str:
        xs = sorted(r[key] for r in rs)
        return format(xs[0], fmt) if len(xs) == 1 else f"{format(xs[0], fmt)}–{format(xs[-1], fmt)}"

    off = [r for r in runs if r["case"]["mode"] == "off" and r["case"]["conversations"] <= 10_000]
    for kib in sorted({r["case"]["turn_kib"] for r in off}):
        rs = [r for r in off if r["case"]["turn_kib"] == kib]
        ok = all(r["ratio_to_anchor"] >= RATIO_GOAL for r in rs)
        out.append(f"evaluation off, {kib} KiB turns: ingest = {span(rs, 'ratio_to_anchor', '.1%')} of parse+walk "
                   f"(goal >= {RATIO_GOAL:.0%}): {'met' if ok else 'NOT met'}")
    dflt = [r for r in runs if r["case"]["mode"] == "defaults" and r["case"]["conversations"] <= 10_000]
    for kib in sorted({r["case"]["turn_kib"] for r in dflt}):
        rs = [r for r in dflt if r["case"]["turn_kib"] == kib]
        ok = all(r["ingest_spans_per_cpu_s"] >= DEFAULTS_GOAL for r in rs)
        out.append(f"embedded defaults, {kib} KiB turns: {span(rs, 'ingest_spans_per_cpu_s', ',.0f')} spans/CPU-s "
                   f"of the process tree (goal >= {DEFAULTS_GOAL:,}): {'met' if ok else 'NOT met'}")
        key = "ingest_spans_per_cpu_s_serving_process"
        ok = all(r[key] >= DEFAULTS_GOAL for r in rs)
        out.append(f"embedded defaults, {kib} KiB turns: {span(rs, key, ',.0f')} spans/CPU-s of the serving process "
                   f"alone (goal >= {DEFAULTS_GOAL:,}): {'met' if ok else 'NOT met'}")
    big = [r for r in dflt if r["case"]["turn_kib"] >= 128]
    if big:
        ok = all(r["peak_rss_mib_tree"] <= RSS_GOAL_MIB for r in big)
        out.append(f"embedded defaults, 128 KiB turns: peak RSS {span(big, 'peak_rss_mib_tree', '.0f')} MiB "
                   f"(goal <= {RSS_GOAL_MIB}): {'met' if ok else 'NOT met'}")
    for r in (r for r in runs if r["case"]["conversations"] >= 100_000):
        p = r["pipeline"]
        churn = p["conversations_closed"].get("evicted", 0) + p["sampler_cache_evicted"]
        covered = r["conversations_sent"] >= r["case"]["conversations"] * 0.99
        verdict = ("no churn" if churn == 0 else f"CHURN ({churn:,.0f} evictions)") + (
            "" if covered else f" — but only {r['conversations_sent']:,} of the pool were sent: not a full test")
        out.append(f"{r['name']} run {r['repeat']}: {r['conversations_sent']:,} conversations sent, "
                   f"closed {_closed(p['conversations_closed'])}, sampler cache evicted "
                   f"{p['sampler_cache_evicted']:,.0f}, open at the end {p['open_conversations_end']:,.0f}: {verdict}")
    return out


def print_report(report: dict[str, Any], markdown: bool = False) -> None:
    m = report["machine"]
    runs = report["runs"]
    print(f"{m['date']}; nproc {m['nproc']}; Python {m['python']}; load average (1 min) at start "
          f"{m['loadavg_1m_start']:.2f}")
    if runs:
        at = f" at {report['tree_commit']}" if report.get("tree_commit") else ""
        print(f"server: {' '.join(runs[0]['server_cmd'])} (cwd {runs[0]['cwd']}{at})")
    rows = [COLUMNS] + [row(r) for r in runs]
    widths = [max(len(x[i]) for x in rows) for i in range(len(COLUMNS))]
    for x in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(x, widths))))
    print()
    for r in runs:
        details = [f"body {r['body_kib_mean']:.0f} KiB", f"turn text {r['turn_text_bytes'] / 1024:.1f} KiB",
                   f"load {r['load_seconds']:.1f} s + drain {r['drain_seconds']:.1f} s"
                   + ("" if r["drained"] else " (NOT drained)"),
                   f"turns assembled {r['pipeline']['turns_assembled']:,.0f}",
                   f"requests {r['requests']}", f"load generators {r['load_generators_cores']:.2f} cores",
                   f"peak RSS after warm-up {r['peak_rss_mib_after_warmup']:.0f} MiB",
                   f"metric evaluations in the warm-up {r['warmup_evaluations']:,.0f}",
                   f"load avg after {r['loadavg_1m_after']:.2f}"]
        extra = {k: v for k, v in r["pipeline"].items() if isinstance(v, dict) and v and k not in (
            "conversations_closed", "evaluations", "turns_evaluated")}
        print(f"{r['name']} run {r['repeat']}: " + "; ".join(details) + (f"; {extra}" if extra else ""))
        for line in r["loader_errors"] + r["server_log_warnings"]:
            print(f"    {line}")
    print()
    for line in goals(runs):
        print(line)
    if markdown:
        print()
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(COLUMNS))) + "|")
        for r in runs:
            print("| " + " | ".join(row(r)) + " |")
