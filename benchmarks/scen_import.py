"""Scenario 6: wall time of ``import asyncsdk`` against ``import aiohttp``, each in a cold
interpreter (a new process per measurement), alternated.

Both are measured with compiled bytecode, as an installed package has it: the children
run with ``PYTHONPYCACHEPREFIX`` set to a fresh temporary folder (filled by a first,
unmeasured import) and without ``PYTHONDONTWRITEBYTECODE`` (set on some machines, which
would make a source checkout recompile every module on every import while site-packages
keep their ``.pyc``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from ._common import ROOT, Paired, Section, median, ratio, spread

SNIPPET = ("import time; t = time.perf_counter(); import {module}; "
           "print(time.perf_counter() - t)")


def _import_seconds(module: str, env: dict[str, str]) -> float:
    out = subprocess.run([sys.executable, "-c", SNIPPET.format(module=module)], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=60, env=env)
    return float(out.stdout.strip())


def run(*, repeats: int) -> Section:
    section = Section(
        "import", "Scenario 6 - import time",
        f"Wall time of the import statement alone in a fresh interpreter, {repeats} times "
        "each, alternated (interpreter start-up not included), with compiled bytecode "
        "for both (as installed).",
        ["module", "median ms", "min-max ms", "x aiohttp"])
    modules = ("aiohttp", "asyncsdk")
    times: dict[str, list[float]] = {m: [] for m in modules}
    with tempfile.TemporaryDirectory(prefix="asyncsdk-bench-pyc-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for m in modules:  # write the bytecode: "cold" is a new process, not a new .pyc
            _import_seconds(m, env)
        for _ in range(repeats):
            for m in modules:
                times[m].append(_import_seconds(m, env) * 1000)
    for m in modules:
        section.rows.append([f"`import {m}`", f"{median(times[m]):.1f}",
                             spread(times[m], "{:.1f}"),
                             f"{ratio(median(times[m]), median(times['aiohttp'])):.2f}"])
    section.pairs.append(Paired("`import asyncsdk`: wall time in a fresh interpreter", "ms",
                                times["asyncsdk"], times["aiohttp"], "`import aiohttp`, same way",
                                "<=", 1.2))
    return section
