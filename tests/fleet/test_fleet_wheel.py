"""The fleet from the built wheel, as a user gets it: the wheel built from this checkout
(``pip wheel``, hatchling from the package index), installed into a fresh virtual
environment outside the repository, first alone, then with the ``fleet`` extra (its
dependencies from the package index, pip's cache first). From that environment's own
``asyncsdk``: the sandbox, a worker, ``submit --wait``, ``status`` and ``export``,
against the suite's redis-server (Redis 6.2). Nothing of the checkout is importable
there (no ``PYTHONPATH``, another folder), and the test says so.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fleet_tools import ROOT

from asyncsdk.cli.fleet import NO_EXTRA
from asyncsdk.cli.inputs import InputFile

pytestmark = pytest.mark.slow
#: Seconds for one pip command (a cold cache downloads the dependencies).
PIP_SECONDS = 300


def run(words: list[str], env: dict[str, str], cwd: Path, timeout: float = 120,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout."""
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                           str(ROOT), "-w", str(dist)], capture_output=True, text=True,
                          timeout=PIP_SECONDS, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (found,) = dist.glob("asyncsdk-*.whl")
    return found


def start_sandbox(asyncsdk: Path, env: dict[str, str], cwd: Path,
                  background: list[subprocess.Popen[Any]]) -> dict[str, str]:
    """``asyncsdk sandbox --port 0`` of the environment; the variables its banner says."""
    proc = subprocess.Popen([str(asyncsdk), "sandbox", "--port", "0"], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    background.append(proc)
    assert proc.stdout is not None
    variables: dict[str, str] = {}
    for line in proc.stdout:  # the banner, then "Press Ctrl-C to stop."
        found = re.match(r"\s*export (ASYNCSDK_\w+)=(\S+)", line)
        if found:
            variables[found.group(1)] = found.group(2)
        if line.startswith("Press Ctrl-C"):
            return variables
    raise AssertionError(f"the sandbox exited with {proc.wait()}")


def test_the_wheel_with_its_fleet_extra_runs_the_fleet(
    wheel: Path, tmp_path: Path,
    start_redis_server: Callable[[], tuple[subprocess.Popen[bytes], str]],
    background: list[subprocess.Popen[Any]],
) -> None:
    home = tmp_path / "user"
    home.mkdir()
    assert ROOT not in home.parents
    venv.EnvBuilder(with_pip=True).create(home / "venv")
    bin_dir = home / "venv" / ("Scripts" if os.name == "nt" else "bin")
    python, asyncsdk = bin_dir / "python", bin_dir / "asyncsdk"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "ASYNCSDK_", "FLEET_", "VIRTUAL_ENV"))}
    env["PATH"] = str(bin_dir) + os.pathsep + env.get("PATH", "")

    # The wheel alone: the library and its command line, not the fleet.
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = run([*pip, str(wheel)], env, home, PIP_SECONDS)
    assert done.returncode == 0, done.stdout + done.stderr
    where = run([str(python), "-c", "import asyncsdk; print(asyncsdk.__file__)"], env, home)
    assert Path(where.stdout.strip()).is_relative_to(home / "venv"), where.stdout
    without = run([str(asyncsdk), "fleet", "status", "x"], env, home)
    assert (without.returncode, without.stderr) == (2, NO_EXTRA + "\n")

    # With the extra: arq and redis come too.
    done = run([*pip, f"{wheel}[fleet]"], env, home, PIP_SECONDS)
    assert done.returncode == 0, done.stdout + done.stderr
    _, redis_url = start_redis_server()  # the suite's (6.2), stopped after the test
    env.update(start_sandbox(asyncsdk, env, home, background), FLEET_REDIS_URL=redis_url)
    log = home / "worker.log"
    with log.open("w") as out:
        background.append(subprocess.Popen([str(asyncsdk), "fleet", "worker"], cwd=home,
                                           env=env, stdout=out, stderr=subprocess.STDOUT,
                                           text=True))
    shutil.copy(ROOT / "examples" / "emails.csv", home / "emails.csv")
    submit = run([str(asyncsdk), "fleet", "submit", "emails.csv", "--run", "w",
                  "--batch-size", "50", "--wait"], env, home)
    assert submit.returncode == 0, submit.stderr + log.read_text()
    assert submit.stderr.startswith("run w: 283 addresses, 6 new batches enqueued\n")
    status = run([str(asyncsdk), "fleet", "status", "w"], env, home)
    assert json.loads(status.stdout) == {"run": "w", "kind": "addresses", "state": "done",
                                         "total": 283, "done": 283, "left": 0}
    export = run([str(asyncsdk), "fleet", "export", "w", "-o", "w.csv"], env, home)
    # 1: rows without a verdict (the file holds addresses that are not ones), as check-many
    assert export.returncode == 1, export.stderr
    assert "(InvalidInputError)" in export.stdout
    with (home / "w.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    inputs = list(InputFile.open(home / "emails.csv").rows())
    assert [(r["row"], r["email"], r["name"]) for r in rows] == [
        (str(row.position), row.email, row.extra[0]) for row in inputs]
    assert "Starting worker" in log.read_text()
