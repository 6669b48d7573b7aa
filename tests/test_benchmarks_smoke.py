"""The benchmark harness runs end to end (``python -m benchmarks --quick --no-write``).

A smoke test only: it checks that every scenario runs and reports, never a timing.
Contenders whose library is not installed (the ``bench``/``speedups`` extras) are skipped
by the harness itself, so this passes with the ``test`` extra alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("targets", "check", "check_many", "decode", "rows", "wait", "import", "looplag")


@pytest.mark.skipif(not (ROOT / "benchmarks" / "__main__.py").exists(),
                    reason="benchmarks/ is not part of this checkout")
def test_quick_benchmark_runs_every_scenario() -> None:
    results = ROOT / "benchmarks" / "RESULTS.md"
    before = results.read_bytes() if results.exists() else None
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--no-write"],
        cwd=ROOT, capture_output=True, text=True, timeout=170,
        env={**os.environ, "PYTHONWARNINGS": "ignore"}, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    for name in SCENARIOS:
        assert f"== {name}:" in proc.stdout, f"scenario {name} missing:\n{output[-4000:]}"
    assert "== summary:" in proc.stdout
    after = results.read_bytes() if results.exists() else None
    assert after == before, "--no-write must leave RESULTS.md alone"


@pytest.mark.skipif(not (ROOT / "benchmarks" / "count_check.py").exists(),
                    reason="benchmarks/ is not part of this checkout")
def test_instruction_count_contenders_run() -> None:
    """Each contender ``count_check`` puts under callgrind runs (natively here)."""
    from benchmarks._common import server_process
    from benchmarks.count_check import DEFAULT

    with server_process(contacts=10) as server:
        for name in DEFAULT:
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.count_check", "--child", name,
                 server.url, "20", "2"],
                cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
            assert proc.returncode == 0, (name, (proc.stdout + proc.stderr)[-4000:])


@pytest.mark.skipif(not (ROOT / "benchmarks" / "scen_pace.py").exists(),
                    reason="benchmarks/ is not part of this checkout")
def test_the_pace_benchmark_runs_and_reports_every_target() -> None:
    """``python -m benchmarks.scen_pace`` end to end on its smallest scenarios (one
    process, a cap in flight, a blackout and a fresh client after it): the
    token-bucket service, every contender, the table and the targets (no timing)."""
    results = ROOT / "benchmarks" / "RESULTS.md"
    before = results.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.scen_pace", "--quick", "--only", "one", "cap",
         "recovery", "--no-write"], cwd=ROOT, capture_output=True, text=True, timeout=170,
        env={**os.environ, "PYTHONWARNINGS": "ignore"}, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert "one process" in proc.stdout and "floor: fixed semaphore" in proc.stdout, output
    assert "a cap of 8 in flight" in proc.stdout, output
    assert "a fresh client started as it takes again" in proc.stdout, output
    for target in ("one process: goodput >= 0.97 R", "of what the cap allows",
                   "recovery: back to 0.9 R within 1 s"):  # met or not: measured
        line = proc.stdout.split(target)[1].split("\n")[0]
        assert "not measured" not in line and "the floor" in line, line
    assert "target: every scenario: each input exactly one outcome" in proc.stdout, output
    once = proc.stdout.split("each input exactly one outcome")[1].split("\n")[0]
    assert once.endswith(": met"), once  # every input one outcome, none paid twice
    assert results.read_bytes() == before, "--no-write must leave RESULTS.md alone"
