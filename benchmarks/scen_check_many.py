"""Scenario 2: ``validation.check_many`` at concurrency 64 against a hand-written
aiohttp + semaphore loop, and its peak memory at two input sizes.

Every measurement is a fresh process (``benchmarks._many_child``, pinned to the client
core) so that peak RSS (``ru_maxrss``) is that run's alone; the addresses come from a
generator. Contenders alternate.
"""

from __future__ import annotations

from typing import Any

from ._common import Section, Target, median, ratio, run_child, spread

CONCURRENCY = 64


def _measure(url: str, contender: str, count: int) -> dict[str, Any]:
    result = run_child("benchmarks._many_child", {
        "url": url, "contender": contender, "count": count, "concurrency": CONCURRENCY})
    if result["outcomes"] != count:
        raise RuntimeError(f"{contender}: {result['outcomes']} successful outcomes of {count}")
    return result


def run(url: str, *, count: int, big: int, repeats: int, big_for_baseline: bool) -> Section:
    section = Section(
        "check_many", "Scenario 2 - check_many: throughput and flat memory",
        f"{count:,} addresses at concurrency {CONCURRENCY}, {repeats} runs per contender, "
        "alternated, each in a fresh process; peak RSS = ru_maxrss of that process "
        f"(imports included); then one run of {big:,} addresses for the memory "
        "comparison. Inputs come from a generator. Both parse with the standard json "
        "module (asyncsdk's orjson speedup switched off for a like-for-like comparison).",
        ["contender", "addresses", "checks/s median", "min-max", "x baseline",
         "CPU us/check", "peak RSS MiB"])
    from asyncsdk.resources.validation import Validation

    if not hasattr(Validation, "check_many"):
        section.notes.append("skipped: client.validation.check_many is not available yet")
        section.targets.append(Target("check_many >= 0.90x aiohttp + semaphore", None))
        return section
    names = {"semaphore": "aiohttp + semaphore loop (baseline)", "asyncsdk": "asyncsdk check_many"}
    runs: dict[str, list[dict[str, Any]]] = {"semaphore": [], "asyncsdk": []}
    for _ in range(repeats):
        for contender in runs:
            runs[contender].append(_measure(url, contender, count))
    rates = {c: [count / r["wall"] for r in rs] for c, rs in runs.items()}
    rss = {c: median([r["maxrss_kib"] / 1024 for r in rs]) for c, rs in runs.items()}
    for contender, rs in runs.items():
        section.rows.append([
            names[contender], f"{count:,}", f"{median(rates[contender]):,.0f}",
            spread(rates[contender]),
            f"{ratio(median(rates[contender]), median(rates['semaphore'])):.2f}",
            f"{median([r['cpu'] / count * 1e6 for r in rs]):.0f}", f"{rss[contender]:.1f}"])
    big_rss: dict[str, float] = {}
    for contender in (("semaphore", "asyncsdk") if big_for_baseline else ("asyncsdk",)):
        r = _measure(url, contender, big)
        big_rss[contender] = r["maxrss_kib"] / 1024
        section.rows.append([names[contender], f"{big:,}", f"{big / r['wall']:,.0f}", "(1 run)",
                             "", f"{r['cpu'] / big * 1e6:.0f}", f"{big_rss[contender]:.1f}"])
    tput = ratio(median(rates["asyncsdk"]), median(rates["semaphore"]))
    section.targets.append(Target("check_many >= 0.90x aiohttp + semaphore loop (checks/s)",
                                  tput >= 0.90, f"{tput:.2f}x"))
    growth = big_rss["asyncsdk"] - rss["asyncsdk"]
    section.targets.append(Target(
        f"flat memory: peak RSS at {big:,} within 5 MiB (or 5 %) of {count:,}",
        growth <= max(5.0, 0.05 * rss["asyncsdk"]),
        f"{rss['asyncsdk']:.1f} -> {big_rss['asyncsdk']:.1f} MiB, {growth:+.1f} MiB"))
    return section
