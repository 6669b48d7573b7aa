"""Benchmark of ``ValidationJob.rows()``: peak RSS growth and rows/s, both wire shapes.

A local aiohttp.web server in a separate process serves a result of ``--rows`` rows
(default 1,000,000) as a CSV body (job 1) and as JSON ``{"status": "success", "result":
"<csv text>"}`` (job 2). Each measurement runs in a fresh process, so its peak RSS
(``ru_maxrss``) is its own; the growth is that peak minus the RSS measured just before
the download starts (client created, connection warmed up). Compared against reading the
whole body and parsing it (``await response.read()`` + ``json.loads`` + ``csv.reader``).

    python benchmarks/bench_rows.py               # 1,000,000 rows
    python benchmarks/bench_rows.py --rows 10000  # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import multiprocessing as mp
import platform
import resource
import sys
import time
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


def measure(url: str, shape: str, method: str, out: Any) -> None:
    import asyncsdk

    async def run() -> tuple[int, float, int]:
        async with asyncsdk.Client("k", "u", base_url=url, timeout=600) as client:
            job = client.validation.job(SHAPES[shape])
            # warm up: session, connection, code paths, with the same job (first row only)
            async for _ in job.rows():
                break
            await asyncio.sleep(0.05)
            base = rss_kib()
            started = time.perf_counter()
            count = 0
            if method == "rows()":
                async for _ in job.rows():
                    count += 1
            else:
                session = client._transport.sessions.session()
                params = {"api": "k", "username": "u", "job_id": SHAPES[shape]}
                async with session.get(f"{url}/api/v1/jobs/download", params=params) as r:
                    body = await r.read()
                text = (json.loads(body)["result"] if shape == "json"
                        else body.decode("utf-8-sig"))
                del body
                reader = csv.reader(io.StringIO(text, newline=""))
                next(reader)
                for _ in reader:
                    count += 1
            return count, time.perf_counter() - started, base

    count, elapsed, base = asyncio.run(run())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out.send({"rows": count, "seconds": elapsed, "growth_kib": max(0, peak - base)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    server = ctx.Process(target=serve, args=(args.rows, send), daemon=True)
    server.start()
    try:
        port, csv_size, json_size = receive.recv()
        url = f"http://127.0.0.1:{port}"
        print(f"# rows() benchmark: {args.rows:,} rows; CSV body {csv_size / 2**20:.1f} MiB, "
              f"JSON body {json_size / 2**20:.1f} MiB; Python {platform.python_version()}, "
              f"{platform.machine()}")
        print(f"{'shape':<6} {'method':<18} {'rows':>10} {'seconds':>8} {'rows/s':>10} "
              f"{'peak RSS growth':>16}")
        failed = False
        for shape in SHAPES:
            for method in ("rows()", "read all + parse"):
                got, give = ctx.Pipe(duplex=False)
                child = ctx.Process(target=measure, args=(url, shape, method, give))
                child.start()
                result = got.recv()
                child.join()
                if result["rows"] != args.rows:
                    failed = True
                print(f"{shape:<6} {method:<18} {result['rows']:>10,} "
                      f"{result['seconds']:>8.2f} {result['rows'] / result['seconds']:>10,.0f} "
                      f"{result['growth_kib'] / 1024:>12.1f} MiB")
        return 1 if failed else 0
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    sys.exit(main())
