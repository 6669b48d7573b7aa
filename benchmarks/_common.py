"""Shared pieces of the benchmarks: statistics, machine facts, pinning, the server process,
the optional contenders and the result sections."""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The cores the client and the server are pinned to (override with
#: ``ASYNCSDK_BENCH_CLIENT_CPU`` / ``ASYNCSDK_BENCH_SERVER_CPU``: on a many-core machine,
#: two cores that are not hyper-thread siblings, neither the one taking interrupts).
CLIENT_CPU = int(os.environ.get("ASYNCSDK_BENCH_CLIENT_CPU") or 0)
SERVER_CPU = int(os.environ.get("ASYNCSDK_BENCH_SERVER_CPU") or 1)
API_KEY = "bench-key"
USERNAME = "bench-user"


# --- statistics ------------------------------------------------------------------------
def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: Sequence[float], fmt: str = "{:,.0f}") -> str:
    """'min-max' of the values."""
    if not values:
        return "-"
    return f"{fmt.format(min(values))}-{fmt.format(max(values))}"


def ratio(value: float, base: float) -> float:
    return value / base if base else float("nan")


# --- machine ---------------------------------------------------------------------------
def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def version_of(dist: str) -> str:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return "not installed"


def has_module(name: str) -> bool:
    """Whether ``name`` can be imported (a missing extra's contender is skipped)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def machine_facts() -> dict[str, str]:
    cores = os.cpu_count() or 0
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cpu_model()}, {cores} cores, {platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "asyncsdk": version_of("asyncsdk"),
        "aiohttp": version_of("aiohttp"),
        "orjson": version_of("orjson"),
        "httpx": version_of("httpx"),
        "requests": version_of("requests"),
        "pydantic": version_of("pydantic"),
    }


def pin(cpu: int) -> bool:
    """Pin this process to one core, if the platform allows and the core exists."""
    if not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2:
        return False
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        return False
    return True


#: The allocator state client processes start in (``settle_allocator``): ``heap`` (the
#: default), ``mapped`` or ``as-is``; override with ``ASYNCSDK_BENCH_READS``.
READS = os.environ.get("ASYNCSDK_BENCH_READS") or "heap"


def settle_allocator(mode: str = READS) -> str:
    """Put glibc's ``malloc`` in a known state for asyncio's 256 KiB socket reads, so
    that a floor's cost does not depend on what its process happened to free before.

    glibc serves a request above its mmap threshold (128 KiB at start) that the heap's
    free space cannot hold with a fresh mapping: such a read then maps 256 KiB, faults
    pages in, shrinks and unmaps it (cpython#85451). The threshold rises for good once a
    mapped block above it is freed, which most long-running processes do early (any big
    list, buffer or body): then the same reads come from the heap. ``heap``: a 4 MiB
    block is allocated and freed (the state of most processes, and the floor's
    cheapest); ``mapped``: the threshold fixed at 128 KiB and the heap kept trimmed (no
    top padding), so that every 256 KiB read is mapped (a stress state: the heap also
    shrinks and grows more often than in a natural process); ``as-is``: left as the
    process's start-up left it (a fresh process: the reads may or may not be mapped; the
    page faults per request say which). The library's own connections read 64 KiB
    (``RECEIVE_BYTES``), from the heap in all three.
    """
    if mode == "heap":
        block = bytearray(4 << 20)  # malloc'd (mapped) and freed: the threshold rises
        del block
        return mode
    if mode == "mapped":
        import ctypes

        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (AttributeError, OSError):  # not glibc
            return "as-is"
        m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
        if (mallopt(m_mmap_threshold, 128 * 1024) == 1
                and mallopt(m_trim_threshold, 128 * 1024) == 1 and mallopt(m_top_pad, 0) == 1):
            return mode
    return "as-is"


# --- the server process ----------------------------------------------------------------
@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]


@contextlib.contextmanager
def server_process(*, contacts: int, rows: int = 0, tls_dir: str = "") -> Iterator[Server]:
    """Start ``benchmarks.server`` in its own process (pinned to ``SERVER_CPU``) and always
    terminate it. With ``tls_dir`` (its ``cert.pem``, ``key.pem``) it speaks HTTPS."""
    cmd = [sys.executable, "-m", "benchmarks.server", "--cpu", str(SERVER_CPU),
           "--contacts", str(contacts), "--rows", str(rows), "--tls-dir", tls_dir]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"benchmark server did not start (said {line!r})")
        scheme = "https" if tls_dir else "http"
        yield Server(f"{scheme}://127.0.0.1:{int(line.split()[1])}", proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()


def run_child(module: str, args: dict[str, Any], timeout: float = 600.0) -> dict[str, Any]:
    """Run ``python -m module`` with ``args`` as JSON on stdin; return its last stdout
    line as JSON (a fresh process per measurement: memory figures don't mix)."""
    proc = subprocess.run(
        [sys.executable, "-m", module], cwd=ROOT, input=json.dumps(args), text=True,
        capture_output=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{module} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# --- results ---------------------------------------------------------------------------
@dataclass
class Target:
    text: str
    met: bool | None  # None: not measured in this run
    detail: str = ""

    @property
    def mark(self) -> str:
        return {True: "met", False: "NOT met", None: "not measured"}[self.met]


@dataclass
class Paired:
    """One target of issue 12: asyncsdk and its floor measured in the same run, one pair
    per repeat (run alternately), the ratio ``sdk / floor`` taken per repeat.

    With ``floor`` None the target is on the value itself (a count, a stall in ms, a
    memory growth in MiB). ``op`` is ``">="`` or ``"<="``; ``limit`` bounds the median
    ratio (paired) or the worst value (absolute)."""

    target: str
    unit: str
    sdk: list[float]
    floor: list[float] | None
    floor_text: str
    op: str
    limit: float
    note: str = ""
    #: False: shown beside a target in another condition, not counted as met or not.
    counted: bool = True

    @property
    def ratios(self) -> list[float]:
        return [ratio(s, f) for s, f in zip(self.sdk, self.floor or [], strict=True)]

    @property
    def value(self) -> float:
        """The median ratio (paired), else the worst value against the limit."""
        if self.floor is not None:
            return median(self.ratios)
        if not self.sdk:
            return float("nan")
        return max(self.sdk) if self.op == "<=" else min(self.sdk)

    @property
    def met(self) -> bool | None:
        v = self.value
        if v != v:  # nan: not measured
            return None
        return v >= self.limit if self.op == ">=" else v <= self.limit

    def row(self) -> list[str]:
        fmt = _fmt(self.unit)
        paired = self.floor is not None
        mark = {True: "met", False: "**NOT met**", None: "not measured"}[self.met]
        if not self.counted:
            mark = {True: "would be met", False: "would not be met",
                    None: "not measured"}[self.met] + "; not counted"
        return [
            self.target,
            self.floor_text if paired else "(absolute)",
            f"{fmt(median(self.sdk))} {self.unit}",
            f"{fmt(median(self.floor or []))} {self.unit}" if paired else "",
            " / ".join(f"{r:.2f}" for r in self.ratios) if paired else _values(self.sdk, fmt),
            f"**{self.value:.2f}x**" if paired else f"**{fmt(self.value)}** (worst)",
            f"{self.op} {self.limit:.2f}x" if paired else f"{self.op} {self.limit:g} {self.unit}",
            mark + (f" ({self.note})" if self.note else ""),
        ]


PAIRED_HEADERS = ["target", "floor (same run)", "asyncsdk median", "floor median",
                  "ratio per repeat (or values)", "median ratio", "target", "result"]


def _values(values: Sequence[float], fmt: Callable[[float], str]) -> str:
    """Every value, or their range where there are many (e.g. 100 jitter sequences)."""
    if len(values) <= 10:
        return " / ".join(fmt(v) for v in values)
    return f"{fmt(min(values))}-{fmt(max(values))} over {len(values)}"


def _fmt(unit: str) -> Callable[[float], str]:
    if unit in ("ms", "MiB", "us/req", "ms/call"):
        return lambda v: f"{v:,.1f}"
    return lambda v: f"{v:,.0f}"


@dataclass
class Section:
    key: str
    title: str
    measured: str
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    pairs: list[Paired] = field(default_factory=list)
    """Optional: targets as paired ratios; the harness gathers them into one table."""

    def markdown(self) -> str:
        out = [f"### {self.title}", "", self.measured, ""]
        if self.rows:
            out.append("| " + " | ".join(self.headers) + " |")
            out.append("|" + "|".join("---" for _ in self.headers) + "|")
            out.extend("| " + " | ".join(r) + " |" for r in self.rows)
            out.append("")
        for t in self.targets:
            out.append(f"- Target: {t.text} - **{t.mark}**" + (f" ({t.detail})" if t.detail
                                                               else ""))
        for n in self.notes:
            out.append(f"- {n}")
        out.append("")
        return "\n".join(out)

    def text(self) -> str:
        out = [f"== {self.key}: {self.title} ({self.seconds:.1f} s)", f"   {self.measured}"]
        if self.rows:
            widths = [max(len(h), *(len(r[i]) for r in self.rows))
                      for i, h in enumerate(self.headers)]
            for cells in (self.headers, *self.rows):
                out.append("   " + "  ".join(
                    c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
        for t in self.targets:
            out.append(f"   target: {t.text}: {t.mark}" + (f" ({t.detail})" if t.detail else ""))
        for p in self.pairs:
            _, floor, sdk, base, per, value, limit, mark = p.row()
            against = f" vs {base} ({floor}), per repeat {per}" if p.floor is not None else ""
            out.append(f"   paired: {p.target}: {sdk}{against} -> {value} [{limit}] {mark}")
        for n in self.notes:
            out.append(f"   note: {n}")
        return "\n".join(out)


class Clock:
    """Wall and process-CPU time of a block."""

    def __enter__(self) -> Clock:
        self.faults0 = _minor_faults()
        self.wall0 = time.perf_counter()
        self.cpu0 = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0
        #: Minor page faults in the block (a mapped read buffer faults its pages in).
        self.faults = _minor_faults() - self.faults0


def _minor_faults() -> int:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
