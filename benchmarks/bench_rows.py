"""Benchmark of ``ValidationJob.rows()``: peak RSS growth and rows/s, both wire shapes.

A local aiohttp.web server in a separate process serves a result of ``--rows`` rows
(default 1,000,000) as a CSV body (job 1) and as JSON ``{"status": "success", "result":
"<csv text>"}`` (job 2). Each measurement runs in a fresh process, so its peak RSS
(``ru_maxrss``) is its own; the growth is that peak minus the RSS measured just before
the download starts (client created, connection warmed up).

The floor (issue 12): raw aiohttp ``iter_chunked(64 KiB)`` + one ``csv.reader`` per
chunk yielding lists, over the CSV body, on a plain ``aiohttp.ClientSession`` of its
own (warmed up like the client: public APIs only on both sides). ``rows()`` (models
included) in both shapes and ``download()`` in both shapes are measured against it,
interleaved in every repeat; each ratio is the median over the repeats of rows/s over
the floor's rows/s of that repeat.
Targets: rows() >= 0.60x, download() >= 0.80x, peak RSS growth <= 16 MiB. The client's
CPU time per row is reported beside it, with its ratio (the floor's CPU time over the
method's, same repeat, median): on a shared machine the wall-clock ratio swings with the
load of others (+-20 % between runs), the CPU ratio much less.

    python benchmarks/bench_rows.py                           # 1,000,000 rows, 3 repeats
    python benchmarks/bench_rows.py --rows 10000 --repeats 1  # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import csv
import io
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from contextlib import aclosing
from typing import Any

SHAPES = {"csv": 1, "json": 2}


def make_csv(rows: int) -> bytes:
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["Email", "Name", "Status", "Role Based Emails"])
    verdicts = ["Valid", "CatchAll", "Unknown", "Disposable", "Bounce"]
    for i in range(rows):
        name = f"Doe, J{i}" if i % 10 == 0 else f"Person {i}"  # some quoted fields
        writer.writerow([f"user{i}@example{i % 97}.com", name, verdicts[i % 5],
                         "True" if i % 7 == 0 else "False"])
    return out.getvalue().encode()


# --- the server process ------------------------------------------------------------------
def serve(rows: int, ready: Any) -> None:
    from aiohttp import web

    csv_body = make_csv(rows)
    json_body = json.dumps({"status": "success", "result": csv_body.decode()}).encode()
    bodies = {"1": (csv_body, "text/csv"), "2": (json_body, "application/json")}

    async def download(request: web.Request) -> web.StreamResponse:
        body, kind = bodies[request.query["job_id"]]
        response = web.StreamResponse()
        response.content_type = kind
        await response.prepare(request)
        view = memoryview(body)
        try:
            for i in range(0, len(body), 256 * 1024):
                await response.write(view[i:i + 256 * 1024])
            await response.write_eof()
        except ConnectionError:  # the warm-up leaves after the first row
            pass
        return response

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/api/v1/jobs/download", download)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.send((port, len(csv_body), len(json_body)))
        await asyncio.Event().wait()

    asyncio.run(main())


# --- one measurement per process ---------------------------------------------------------
def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() // 1024


async def floor_records(session: Any, url: str, job: int) -> Any:
    """The floor: raw aiohttp ``iter_chunked(64 KiB)``, cut at the last line feed, one
    ``csv.reader`` per piece, yielding lists (what a user could write by hand for the
    CSV body; it does not handle quoted line ends across chunks)."""
    params = {"api": "k", "username": "u", "job_id": job}
    async with session.get(f"{url}/api/v1/jobs/download", params=params) as response:
        decoder = codecs.getincrementaldecoder("utf-8-sig")()
        rest = ""
        async for chunk in response.content.iter_chunked(64 * 1024):
            text = rest + decoder.decode(chunk)
            cut = text.rfind("\n") + 1
            rest = text[cut:]
            for record in csv.reader(io.StringIO(text[:cut], newline="")):
                yield record
        for record in csv.reader(io.StringIO(rest + decoder.decode(b"", True), newline="")):
            yield record


def measure(url: str, shape: str, method: str, folder: str, out: Any,
            tree: str = "") -> None:
    """One measurement, in this fresh process; ``tree``: import asyncsdk from there."""
    if tree:
        sys.path.insert(0, tree)
    import aiohttp

    import asyncsdk

    async def run() -> tuple[int, float, float, int]:
        async with asyncsdk.Client("k", "u", base_url=url, timeout=600) as client, \
                aiohttp.ClientSession() as session:
            job = client.validation.job(SHAPES[shape])
            # warm up: sessions, connections, code paths, with the same job (first row
            # only); the floor on a plain aiohttp session of its own, as a user's code
            async with aclosing(job.rows()) as rows:
                async for _ in rows:
                    break
            if method == "floor":  # (its CSV body: a JSON one left unread would pile up)
                async with aclosing(floor_records(session, url, SHAPES["csv"])) as records:
                    async for _ in records:
                        break
            await asyncio.sleep(0.05)
            base = rss_kib()
            cpu = time.process_time()
            started = time.perf_counter()
            count = 0
            if method == "rows()":
                async for _ in job.rows():
                    count += 1
            elif method == "download()":
                count = await job.download(os.path.join(folder, f"{shape}.csv"))
            elif method == "floor":
                async for _ in floor_records(session, url, SHAPES[shape]):
                    count += 1
                count -= 1  # the header
            else:
                raise ValueError(method)
            return count, time.perf_counter() - started, time.process_time() - cpu, base

    count, elapsed, cpu, base = asyncio.run(run())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out.send({"rows": count, "seconds": elapsed, "cpu": cpu, "growth_kib": max(0, peak - base)})


#: What is measured, in this order in every repeat: the floor (CSV body), then the
#: library in both shapes.
RUNS = [("csv", "floor"), ("csv", "rows()"), ("json", "rows()"), ("csv", "download()"),
        ("json", "download()")]
BEFORE = " before"


def runs_of(repeat: int, before: str) -> list[tuple[str, str]]:
    """The runs of one repeat: with ``before`` (a tree of the code before a change),
    each of the library's runs beside the same with that code, in alternating order."""
    if not before:
        return RUNS
    runs = [RUNS[0]]
    for shape, method in RUNS[1:]:
        pair = [(shape, method), (shape, method + BEFORE)]
        runs += pair if repeat % 2 == 0 else pair[::-1]
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default="", metavar="DIR",
                        help="also measure the library imported from DIR (an export of "
                        "the code before a change), interleaved with this one: rows "
                        "labelled 'before'")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    server = ctx.Process(target=serve, args=(args.rows, send), daemon=True)
    server.start()
    try:
        port, csv_size, json_size = receive.recv()
        print(f"# rows() benchmark: {args.rows:,} rows; CSV body {csv_size / 2**20:.1f} MiB, "
              f"JSON body {json_size / 2**20:.1f} MiB; Python {platform.python_version()}, "
              f"{platform.machine()}; {args.repeats} interleaved repeats, each run in a "
              "fresh process; ratio = rows/s over the floor's rows/s of the same repeat "
              "(median)" + (f"; 'before': asyncsdk from {args.before}" if args.before else ""))
        table = Table()
        with tempfile.TemporaryDirectory() as folder:
            for repeat in range(args.repeats):
                for shape, method in runs_of(repeat, args.before):
                    tree = args.before if method.endswith(BEFORE) else ""
                    got, give = ctx.Pipe(duplex=False)
                    child = ctx.Process(target=measure, args=(
                        f"http://127.0.0.1:{port}", shape, method.removesuffix(BEFORE),
                        folder, give, tree))
                    child.start()
                    table.add(shape, method, got.recv(), args.rows)
                    child.join()
        table.show()
        return 1 if table.failed else 0
    finally:
        server.terminate()
        server.join()


class Table:
    """The measurements, each paired with the floor of its repeat."""

    def __init__(self) -> None:
        self.results: dict[tuple[str, str], list[dict[str, float]]] = {}
        self.ratios: dict[tuple[str, str], list[float]] = {}
        self.cpu_ratios: dict[tuple[str, str], list[float]] = {}
        self.floor_rate = self.floor_cpu = 0.0
        self.failed = False

    def add(self, shape: str, method: str, result: dict[str, float], rows: int) -> None:
        self.failed = self.failed or result["rows"] != rows
        rate = result["rows"] / result["seconds"]
        if method == "floor":
            self.floor_rate, self.floor_cpu = rate, result["cpu"]
        self.results.setdefault((shape, method), []).append(result)
        self.ratios.setdefault((shape, method), []).append(
            rate / self.floor_rate if self.floor_rate else 0.0)
        self.cpu_ratios.setdefault((shape, method), []).append(self.floor_cpu / result["cpu"])

    def show(self) -> None:
        print(f"{'shape':<6} {'method':<18} {'rows':>10} {'seconds':>8} {'rows/s':>10} "
              f"{'ratio':>6} {'peak RSS growth':>16} {'CPU µs/row':>10} {'CPU ratio':>9}")
        for (shape, method), runs in self.results.items():
            seconds = statistics.median(r["seconds"] for r in runs)
            growth = max(r["growth_kib"] for r in runs) / 1024
            ratio = statistics.median(self.ratios[(shape, method)])
            cpu = statistics.median(r["cpu"] for r in runs) / runs[0]["rows"] * 1e6
            cpu_ratio = statistics.median(self.cpu_ratios[(shape, method)])
            print(f"{shape:<6} {method:<18} {runs[0]['rows']:>10,} {seconds:>8.2f} "
                  f"{runs[0]['rows'] / seconds:>10,.0f} {ratio:>5.2f}x {growth:>12.1f} MiB "
                  f"{cpu:>10.2f} {cpu_ratio:>8.2f}x   per repeat: "
                  + " / ".join(f"{r:.2f}" for r in self.ratios[(shape, method)]))


if __name__ == "__main__":
    sys.exit(main())
