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


@pytest.mark.skipif(not (ROOT / "benchmarks" / "ablate_check.py").exists(),
                    reason="benchmarks/ is not part of this checkout")
def test_check_ablation_runs_every_contender() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.ablate_check", "--concurrency", "2",
         "--repeats", "2", "--requests", "20"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    lines = proc.stdout.splitlines()
    for name in ("raw", "raw_prebuilt", "wire", "one_coroutine", "+url", "+timeout", "+answer",
                 "+in_flight", "+all_four", "asyncsdk"):
        assert any(line.split()[:1] == [name] for line in lines), proc.stdout


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


@pytest.mark.skipif(not (ROOT / "benchmarks" / "reads_check.py").exists(),
                    reason="benchmarks/ is not part of this checkout")
def test_small_reads_take_no_page_fault_where_asyncios_reads_map_a_buffer() -> None:
    """``reads_check`` end to end, and what it shows, counted rather than timed: with the
    allocator forced to map every 256 KiB read, aiohttp's default connection faults pages
    in for each answer (twice over TLS), the library's 64 KiB reads none."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.reads_check", "--requests", "300", "--repeats", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    faults: dict[tuple[str, str, str], float] = {}
    for line in proc.stdout.splitlines()[1:]:
        scheme, state, *name, _cpu, _ratio, per_request = line.split()
        faults[scheme, state, " ".join(name)] = float(per_request)
    assert len(faults) == 12, proc.stdout
    if ("http", "mapped", "client.validation.check") not in faults:
        pytest.skip("not glibc: the mapped state cannot be forced")
    for scheme in ("http", "https"):
        assert faults[scheme, "mapped", "raw aiohttp, default reads"] >= 1.5, proc.stdout
        assert faults[scheme, "mapped", "raw aiohttp, 64 KiB reads"] < 0.2, proc.stdout
        assert faults[scheme, "mapped", "client.validation.check"] < 0.2, proc.stdout
