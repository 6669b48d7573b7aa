"""Scenario 4: ``job.rows()`` and ``download()`` over a large result in both wire shapes,
against the floor of issue 12 (raw aiohttp ``iter_chunked(64 KiB)`` + ``csv.reader``
yielding lists), measured by ``benchmarks/bench_rows.py`` in a subprocess (interleaved
repeats, each measurement in a fresh process) and folded into this report."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from ._common import ROOT, Section, Target

LINE = re.compile(r"^(csv|json)\s+(floor|rows\(\)|download\(\))\s+([\d,]+)\s+([\d.]+)\s+"
                  r"([\d,]+)\s+([\d.]+)x\s+([\d.]+) MiB")


def run(*, rows: int, repeats: int = 3) -> Section:
    script = ROOT / "benchmarks" / "bench_rows.py"
    section = Section(
        "rows", "Scenario 4 - job.rows() and download(): a job's result, both wire shapes",
        f"`python benchmarks/bench_rows.py --rows {rows} --repeats {repeats}`: the floor "
        "(raw aiohttp `iter_chunked(64 KiB)` + one `csv.reader` per chunk yielding lists, "
        "CSV body), `rows()` (models included) and `download()` in both shapes, "
        "interleaved in each repeat, each in a fresh process. Ratio: median over the "
        "repeats of rows/s over the floor's rows/s in the same repeat. Peak RSS growth = "
        "ru_maxrss minus RSS before the download (worst repeat).",
        ["shape", "method", "rows", "seconds", "rows/s", "ratio to floor",
         "peak RSS growth MiB"])
    if not script.exists():
        section.notes.append("skipped: benchmarks/bench_rows.py is not there")
        section.targets.append(Target("rows() memory bounded", None))
        return section

    def all_cores() -> None:  # undo the client's pinning: the script places its own
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, range(os.cpu_count() or 1))

    proc = subprocess.run(
        [sys.executable, str(script), "--rows", str(rows), "--repeats", str(repeats)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
        preexec_fn=all_cores)
    ratios: dict[tuple[str, str], float] = {}
    growth: dict[tuple[str, str], float] = {}
    for line in proc.stdout.splitlines():
        m = LINE.match(line.strip())
        if m:
            shape, method, n, secs, rate, ratio, mib = m.groups()
            section.rows.append([shape.upper(), f"`{method}`", n, secs, rate, f"{ratio}x", mib])
            ratios[(shape, method)] = float(ratio)
            growth[(shape, method)] = float(mib)
    if proc.returncode != 0 or len(ratios) != 5:
        section.notes.append(f"bench_rows.py exited {proc.returncode}: "
                             f"{(proc.stderr or proc.stdout)[-300:]!r}")
    for method, floor in (("rows()", 0.60), ("download()", 0.80)):
        for shape in ("csv", "json"):
            got = ratios.get((shape, method))
            section.targets.append(Target(
                f"`{method}` {shape.upper()} shape >= {floor:.2f}x the floor",
                None if got is None else got >= floor,
                "not measured" if got is None else f"{got:.2f}x"))
    library = [v for (_, method), v in growth.items() if method != "floor"]
    worst = max(library) if library else float("nan")
    section.targets.append(Target(
        "rows()/download() peak RSS growth <= 16 MiB whatever the size, both shapes",
        (worst <= 16.0) if library else None, f"worst {worst:.1f} MiB at {rows:,} rows"))
    return section
