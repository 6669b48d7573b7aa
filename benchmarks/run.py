"""Run every benchmark scenario and report: ``python -m benchmarks [--quick] [--no-write]``.

One command reproduces, on this machine and in one run, how asyncsdk compares with the
alternatives. A minimal aiohttp.web server of the hot endpoints runs in its own process
(``benchmarks.server``, pinned to one core; this process, the client, to the other);
contenders alternate (A B A B ...), every figure is the median of at least three runs with
its min-max, and ratios are to the named baseline measured in the same run. The table goes
to stdout and, unless ``--no-write``, to ``benchmarks/RESULTS.md`` between the markers
``<!-- harness:start -->`` and ``<!-- harness:end -->`` (the rest of the file is kept).

Contenders whose library is not installed (the ``bench`` and ``speedups`` extras: httpx,
requests, pydantic, orjson) are skipped, and the output says so. Everything is bounded in
count and time and talks to 127.0.0.1 only.

Scenarios: targets, check, check_many, decode, rows, wait, import, looplag (``--only``
picks some). ``targets`` measures every target of issue 12 as a paired ratio against its
floor (``benchmarks/floors.py``); every scenario may add such pairs to its section
(``Section.pairs``), and the harness puts them all in one table, "Paired targets", at the
top of the report. ``--out FILE`` also writes the whole report to FILE, to paste into
``benchmarks/RESULTS.md``.

The interface of a scenario: a module ``scen_<name>.py`` whose ``run(...)`` returns a
``_common.Section`` (rows, targets, notes). To put a target in the paired table, append
``Paired(target, unit, sdk, floor, floor_text, op, limit)`` to ``section.pairs``: ``sdk``
and ``floor`` hold one value per repeat, measured alternately in the same run (the ratio
``sdk / floor`` is taken per repeat, ``op`` ``">="``/``"<="`` bounds its median);
``floor=None`` bounds the worst value itself. The floors live in ``benchmarks/floors.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._common import (
    CLIENT_CPU,
    PAIRED_HEADERS,
    READS,
    ROOT,
    SERVER_CPU,
    Section,
    Target,
    machine_facts,
    pin,
    server_process,
    settle_allocator,
)
from .scen_targets import TargetSizes

RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START = "<!-- harness:start -->"
END = "<!-- harness:end -->"
SCENARIOS = ("targets", "check", "check_many", "decode", "rows", "wait", "import", "looplag")


@dataclass(frozen=True)
class Sizes:
    check_requests: int
    check_repeats: int
    many_count: int
    many_big: int
    many_repeats: int
    many_big_for_baseline: bool
    decode_records: int
    decode_repeats: int
    rows: int
    wait_seeds: int
    import_repeats: int
    targets: TargetSizes
    lag_records: tuple[int, ...]
    lag_repeats: int
    rows_repeats: int = 3


FULL = Sizes(check_requests=3_000, check_repeats=5, many_count=20_000, many_big=200_000,
             many_repeats=3, many_big_for_baseline=True, decode_records=10_000,
             decode_repeats=7, rows=1_000_000, wait_seeds=100, import_repeats=10,
             targets=TargetSizes(check_requests=1_000, many_count=3_000,
                                 many_mem=(5_000, 50_000), rows=1_000_000,
                                 list_records=10_000, repeats=31, rows_repeats=9),
             lag_records=(10_000, 50_000), lag_repeats=3)
QUICK = Sizes(check_requests=100, check_repeats=1, many_count=500, many_big=2_000,
              many_repeats=1, many_big_for_baseline=False, decode_records=1_000,
              decode_repeats=1, rows=5_000, wait_seeds=3, import_repeats=1,
              targets=TargetSizes(check_requests=50, many_count=200, many_mem=(200, 1_000),
                                  rows=5_000, list_records=1_000, repeats=1,
                                  rows_repeats=1),
              lag_records=(1_000, 5_000), lag_repeats=1, rows_repeats=1)


def _scenarios(sizes: Sizes, url: str) -> dict[str, Callable[[], Section]]:
    from . import (
        scen_check,
        scen_check_many,
        scen_decode,
        scen_import,
        scen_looplag,
        scen_rows,
        scen_targets,
        scen_wait,
    )

    return {
        "targets": lambda: scen_targets.run(url, sizes=sizes.targets),
        "check": lambda: scen_check.run(url, requests_per_run=sizes.check_requests,
                                        repeats=sizes.check_repeats),
        "check_many": lambda: scen_check_many.run(
            url, count=sizes.many_count, big=sizes.many_big, repeats=sizes.many_repeats,
            big_for_baseline=sizes.many_big_for_baseline),
        "decode": lambda: scen_decode.run(records=sizes.decode_records,
                                          repeats=sizes.decode_repeats),
        "rows": lambda: scen_rows.run(rows=sizes.rows, repeats=sizes.rows_repeats),
        "wait": lambda: scen_wait.run(url, seeds=sizes.wait_seeds),
        "import": lambda: scen_import.run(repeats=sizes.import_repeats),
        "looplag": lambda: scen_looplag.run(url, sizes=sizes.lag_records,
                                            repeats=sizes.lag_repeats),
    }


def _failed(key: str, exc: BaseException) -> Section:
    section = Section(key, f"{key}: FAILED", "The scenario raised; see the output.")
    section.notes.append(f"{type(exc).__name__}: {exc}")
    section.targets.append(Target(f"{key} ran", False))
    return section


def render(sections: list[Section], facts: dict[str, str], mode: str, total: float) -> str:
    lines = [
        START,
        "## Harness: asyncsdk against the alternatives",
        "",
        "Reproduce with one command from the repository root: `python -m benchmarks` "
        "(full run) or `python -m benchmarks --quick` (smoke run, tiny sizes, < 60 s). "
        "Install the contenders first: `pip install -e '.[bench,speedups]'` (a missing "
        "library's contender is skipped and the output says so). Generated by "
        "`benchmarks/run.py`; do not edit between the harness markers.",
        "",
        f"- Run: **{mode}**, {facts['date']}, {total:.0f} s in all",
        f"- Machine: {facts['machine']}; load average at start {facts['load']}",
        f"- Python {facts['python']}; asyncsdk {facts['asyncsdk']}, aiohttp {facts['aiohttp']}, "
        f"orjson {facts['orjson']}, httpx {facts['httpx']}, requests {facts['requests']}, "
        f"pydantic {facts['pydantic']}",
        "- Method: the server (`benchmarks/server.py`, aiohttp.web, 127.0.0.1) runs in its own "
        f"process pinned to core {SERVER_CPU}, the client to core {CLIENT_CPU}; contenders "
        "alternate; every "
        "figure is a median of the repeats (with min-max); ratios are to the baseline of the "
        "same run. The machine may be shared: req/s moves with other load, CPU per request "
        "much less.",
        f"- Allocator: every client process starts with glibc's malloc in the `{READS}` state "
        "(`benchmarks/_common.py` `settle_allocator`; `ASYNCSDK_BENCH_READS`): whether "
        "asyncio's 256 KiB socket reads are mapped afresh each time depends otherwise on what "
        "the process freed before, and moves a floor's CPU per request by a quarter.",
        "",
        *paired_table(sections),
        "### Targets",
        "",
        "| scenario | target | result |",
        "|---|---|---|",
    ]
    for s in sections:
        for t in s.targets:
            shown = f"**{t.mark}**" + (f" ({t.detail})" if t.detail else "")
            lines.append(f"| {s.key} | {t.text} | {shown} |")
    lines.append("")
    lines.extend(s.markdown() for s in sections)
    lines.append(END)
    return "\n".join(lines)


def paired_table(sections: list[Section]) -> list[str]:
    """The "Paired targets" table: every ``Section.pairs`` of the run, in order."""
    pairs = [p for s in sections for p in s.pairs]
    if not pairs:
        return []
    counted = [p for p in pairs if p.counted]
    met = sum(p.met is True for p in counted)
    lines = [
        "### Paired targets (issue 12)",
        "",
        f"{met} of {len(counted)} met ({len(pairs) - len(counted)} more rows shown, not "
        "counted: the allocator as a fresh process has it). Ratio = asyncsdk / floor, "
        "taken per repeat (the two run alternately in the same process, with the same "
        "JSON library), median shown; "
        "for req/s, checks/s, rows/s and records/s higher is better, for CPU per request "
        "lower is better. Rows marked (absolute) bound the worst value itself.",
        "",
        "| " + " | ".join(PAIRED_HEADERS) + " |",
        "|" + "|".join("---" for _ in PAIRED_HEADERS) + "|",
    ]
    lines += ["| " + " | ".join(p.row()) + " |" for p in pairs]
    return [*lines, ""]


def write_results(block: str, path: Path = RESULTS) -> None:
    """Put ``block`` between the markers, keeping everything else in the file."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    if START in old and END in old:
        head, rest = old.split(START, 1)
        tail = rest.split(END, 1)[1]
        new = head + block + tail
    else:
        lines = old.splitlines(keepends=True)
        at = 1 if lines and lines[0].startswith("# ") else 0
        new = "".join(lines[:at]) + "\n" + block + "\n\n" + "".join(lines[at:]).lstrip("\n")
    path.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: tiny sizes, still >= 3 repeats (< 60 s)")
    parser.add_argument("--no-write", action="store_true",
                        help="print only; leave benchmarks/RESULTS.md as it is")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="also write the report (markdown) to FILE")
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, metavar="NAME",
                        help=f"run only these scenarios ({', '.join(SCENARIOS)})")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    mode = "quick (smoke sizes)" if args.quick else "full"
    pinned = pin(CLIENT_CPU)
    settle_allocator()
    facts = machine_facts()
    facts["load"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"asyncsdk benchmarks, {mode}: {facts['machine']}; Python {facts['python']}; "
          f"asyncsdk {facts['asyncsdk']}, aiohttp {facts['aiohttp']}; load {facts['load']}; "
          f"client pinned to core {CLIENT_CPU}: {'yes' if pinned else 'no'} (server: core "
          f"{SERVER_CPU})", flush=True)
    sections: list[Section] = []
    crashed = False
    started = time.perf_counter()
    with server_process(contacts=sizes.decode_records, rows=sizes.targets.rows) as server:
        scenarios = _scenarios(sizes, server.url)
        for key in args.only or SCENARIOS:
            t0 = time.perf_counter()
            try:
                section = scenarios[key]()
            except Exception as exc:  # report it, run the rest, fail at the end
                traceback.print_exc()
                section, crashed = _failed(key, exc), True
            section.seconds = time.perf_counter() - t0
            sections.append(section)
            print(section.text(), flush=True)
    total = time.perf_counter() - started
    marks = [t.met for s in sections for t in (*s.targets, *s.pairs)
             if getattr(t, "counted", True)]
    met, missed = marks.count(True), marks.count(False)
    print(f"== summary: {met} targets met, {missed} not met, in {total:.1f} s")
    report = render(sections, facts, mode, total)
    if args.out is not None:
        args.out.write_text(report + "\n", encoding="utf-8")
        print(f"written: {args.out}")
    if not args.no_write:
        write_results(report)
        print(f"written: {RESULTS.relative_to(ROOT)} (between the harness markers)")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
