"""Scenario 2: ``validation.check_many`` at concurrency 16 and 64 against its floor (issue
12, target 2): raw aiohttp driven by as many workers, each ``session.get(url, params=...)``
+ ``json.loads(await resp.read())`` in a loop over one shared iterator; and its peak
memory at two input sizes.

Every measurement is a fresh process (``benchmarks._many_child``, pinned to the client
core) so that peak RSS (``ru_maxrss``) is that run's alone; the addresses come from a
generator. Contenders alternate within each repeat (floor, asyncsdk, asyncsdk + orjson),
so each ratio pairs runs taken side by side.
"""

from __future__ import annotations

from typing import Any

from ._common import Section, Target, has_module, median, run_child, spread

CONCURRENCIES = (16, 64)
#: The floor's ratio that check_many must reach (issue 12, target 2).
TARGET = 0.95
NAMES = {
    "workers": "raw aiohttp, c workers (floor)",
    "asyncsdk": "asyncsdk check_many (json)",
    "asyncsdk-orjson": "asyncsdk check_many (orjson)",
}


def _measure(url: str, contender: str, count: int, concurrency: int) -> dict[str, Any]:
    result = run_child("benchmarks._many_child", {
        "url": url, "contender": contender, "count": count, "concurrency": concurrency})
    if result["outcomes"] != count:
        raise RuntimeError(f"{contender}: {result['outcomes']} successful outcomes of {count}")
    return result


def run(url: str, *, count: int, big: int, repeats: int, big_for_baseline: bool) -> Section:
    """``big_for_baseline`` False is the smoke run (``--quick``): one repeat, no orjson
    row, so that it stays well inside the smoke test's time on a busy machine."""
    contenders = ["workers", "asyncsdk"]
    if big_for_baseline and has_module("orjson"):
        contenders.append("asyncsdk-orjson")
    if not big_for_baseline:
        repeats = 1
    section = Section(
        "check_many", "Scenario 2 - check_many: throughput and flat memory",
        f"{count:,} addresses at concurrency {' and '.join(map(str, CONCURRENCIES))}, "
        f"{repeats} runs per contender, alternated, each in a fresh process; the floor is "
        "raw aiohttp driven by c workers over one shared iterator, parsing with json.loads "
        "(asyncsdk's orjson speedup off in the json row, on in the orjson row); peak RSS = "
        f"ru_maxrss of that process (imports included); then one run of {big:,} addresses "
        "at concurrency 64 for the memory comparison. Inputs come from a generator.",
        ["contender", "c", "addresses", "checks/s median", "min-max", "x floor",
         "CPU us/check", "peak RSS MiB"])
    rss: dict[str, float] = {}
    for concurrency in CONCURRENCIES:
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
        for _ in range(repeats):
            for contender in contenders:
                runs[contender].append(_measure(url, contender, count, concurrency))
        rates = {c: [count / r["wall"] for r in rs] for c, rs in runs.items()}
        # paired: each repeat's ratio against the floor measured right beside it
        paired = {c: median([a / b for a, b in zip(rates[c], rates["workers"], strict=True)])
                  for c in contenders}
        for contender, rs in runs.items():
            section.rows.append([
                NAMES[contender], str(concurrency), f"{count:,}",
                f"{median(rates[contender]):,.0f}", spread(rates[contender]),
                f"{paired[contender]:.2f}",
                f"{median([r['cpu'] / count * 1e6 for r in rs]):.0f}",
                f"{median([r['maxrss_kib'] / 1024 for r in rs]):.1f}"])
        for contender in contenders[1:]:
            section.targets.append(Target(
                f"check_many ({contender.partition('-')[2] or 'json'}) at c={concurrency} "
                f">= {TARGET:.2f}x raw aiohttp with c workers (checks/s)",
                paired[contender] >= TARGET, f"{paired[contender]:.2f}x"))
        if concurrency == CONCURRENCIES[-1]:
            rss = {c: median([r["maxrss_kib"] / 1024 for r in rs]) for c, rs in runs.items()}
    big_rss: dict[str, float] = {}
    for contender in (("workers", "asyncsdk") if big_for_baseline else ("asyncsdk",)):
        r = _measure(url, contender, big, CONCURRENCIES[-1])
        big_rss[contender] = r["maxrss_kib"] / 1024
        section.rows.append([NAMES[contender], str(CONCURRENCIES[-1]), f"{big:,}",
                             f"{big / r['wall']:,.0f}", "(1 run)", "",
                             f"{r['cpu'] / big * 1e6:.0f}", f"{big_rss[contender]:.1f}"])
    growth = big_rss["asyncsdk"] - rss["asyncsdk"]
    section.targets.append(Target(
        f"flat memory: peak RSS at {big:,} within 5 MiB (or 5 %) of {count:,}",
        growth <= max(5.0, 0.05 * rss["asyncsdk"]),
        f"{rss['asyncsdk']:.1f} -> {big_rss['asyncsdk']:.1f} MiB, {growth:+.1f} MiB"))
    return section
