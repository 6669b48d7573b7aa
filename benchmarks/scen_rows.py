"""Scenario 4: ``job.rows()`` over a large result in both wire shapes - measured by
``benchmarks/bench_rows.py`` (owned by the rows() work; run here as it is, in a
subprocess, and its table folded into this report)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from ._common import ROOT, Section, Target

LINE = re.compile(r"^(csv|json)\s+(rows\(\)|read all \+ parse)\s+([\d,]+)\s+([\d.]+)\s+"
                  r"([\d,]+)\s+([\d.]+) MiB")


def run(*, rows: int) -> Section:
    script = ROOT / "benchmarks" / "bench_rows.py"
    section = Section(
        "rows", "Scenario 4 - job.rows(): streaming a job's result, both wire shapes",
        f"`python benchmarks/bench_rows.py --rows {rows}` (one run per shape and method, "
        "each in a fresh process; see the section \"rows() streaming\" below for the "
        "method). Peak RSS growth = ru_maxrss minus RSS before the download.",
        ["shape", "method", "rows", "seconds", "rows/s", "peak RSS growth MiB"])
    if not script.exists():
        section.notes.append("skipped: benchmarks/bench_rows.py is not there")
        section.targets.append(Target("rows() memory bounded", None))
        return section
    def all_cores() -> None:  # undo the client's pinning: the script places its own
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, range(os.cpu_count() or 1))

    proc = subprocess.run([sys.executable, str(script), "--rows", str(rows)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, check=False,
                          preexec_fn=all_cores)
    growth: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        m = LINE.match(line.strip())
        if m:
            shape, method, n, secs, rate, mib = m.groups()
            section.rows.append([shape.upper(), f"`{method}`", n, secs, rate, mib])
            if method == "rows()":
                growth[shape] = float(mib)
    if proc.returncode != 0 or len(growth) != 2:
        section.notes.append(f"bench_rows.py exited {proc.returncode}: "
                             f"{(proc.stderr or proc.stdout)[-300:]!r}")
    worst = max(growth.values()) if growth else float("nan")
    section.targets.append(Target(
        "rows() peak RSS growth <= 16 MiB whatever the size, both shapes",
        (worst <= 16.0) if growth else None, f"worst {worst:.1f} MiB at {rows:,} rows"))
    return section
