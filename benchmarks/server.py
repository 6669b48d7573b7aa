"""The benchmark server: a minimal ``aiohttp.web`` app of the hot endpoints, run in its
own process by the harness (``python -m benchmarks.server``). It prints ``PORT <n>`` when
it listens on 127.0.0.1 and runs until terminated.

Endpoints (credentials are not checked: the contenders all send the same query):

* ``GET /api/v1/single/check?email=...`` -> ``{"email", "status": "success", "result":
  "Valid", "role": false}``
* ``GET /api/v1/contact/`` -> ``--contacts`` records in lists of 1,000 (precomputed)
* ``GET /n<N>/api/v1/contact/`` -> the same listing with N records (made on first use;
  a client reaches it with ``base_url=<server>/n<N>``: the loop-lag probe's 10k and 50k)
* ``GET /api/v1/jobs/download?job_id=J`` -> a job's result of ``--rows`` rows: J=1 the
  CSV shape (text/csv attachment), J=2 the JSON shape ``{"status": "success", "result":
  "<csv>"}``; J=3 and J=4 the same shapes with 100 rows (warm-ups).
* ``GET /api/v1/jobs/status?job_id=N`` -> ``processing`` while the request's
  ``X-Bench-Clock`` header (the client's fake clock) is below N seconds, then
  ``success`` (scenario 5)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from aiohttp import web

from ._common import pin
from ._data import check_body, contact_lists_body, result_csv, result_json

JSON = "application/json"
PROCESSING = b'{"status": "processing"}'
SUCCESS = b'{"status": "success"}'


def build_app(contacts: int, rows: int = 0) -> web.Application:
    contacts_body = contact_lists_body(contacts)
    listings: dict[int, bytes] = {contacts: contacts_body}
    results: dict[str, bytes] = {}
    if rows:  # made now: the first measured download must not wait for it
        results["1"] = result_csv(rows)
        results["2"] = result_json(results["1"])

    async def single_check(request: web.Request) -> web.Response:
        return web.Response(body=check_body(request.query.get("email", "")), content_type=JSON)

    async def contact_list(request: web.Request) -> web.Response:
        return web.Response(body=contacts_body, content_type=JSON)

    async def sized_list(request: web.Request) -> web.Response:
        records = int(request.match_info["records"])
        if records not in listings:
            listings[records] = contact_lists_body(records)
        return web.Response(body=listings[records], content_type=JSON)

    async def job_download(request: web.Request) -> web.Response:
        job = request.query.get("job_id", "")
        if job not in ("1", "2", "3", "4"):
            return web.json_response({"status": "fail", "error": "This Job Id not "
                                      "associated to your users."})
        if job not in results:
            body = result_csv(rows if job in ("1", "2") else 100)
            results[job] = body if job in ("1", "3") else result_json(body)
        if job in ("2", "4"):
            return web.Response(body=results[job], content_type=JSON)
        return web.Response(body=results[job], content_type="text/csv", headers={
            "Content-Disposition": 'attachment; filename="emaillist.csv"'})

    async def job_status(request: web.Request) -> web.Response:
        finish = float(request.query.get("job_id", "0"))
        now = float(request.headers.get("X-Bench-Clock", "inf"))
        return web.Response(body=SUCCESS if now >= finish else PROCESSING, content_type=JSON)

    app = web.Application()
    app.router.add_get("/api/v1/single/check", single_check)
    app.router.add_get("/api/v1/contact/", contact_list)
    app.router.add_get("/api/v1/jobs/status", job_status)
    app.router.add_get("/n{records:[0-9]+}/api/v1/contact/", sized_list)
    app.router.add_get("/api/v1/jobs/download", job_download)
    return app


async def serve(contacts: int, rows: int, tls_dir: str = "") -> None:
    runner = web.AppRunner(build_app(contacts, rows), access_log=None, handle_signals=False)
    await runner.setup()
    context = None
    if tls_dir:  # cert.pem and key.pem of 127.0.0.1
        import ssl

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(os.path.join(tls_dir, "cert.pem"),
                                os.path.join(tls_dir, "key.pem"))
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024, ssl_context=context)
    await site.start()
    server = site._server
    assert server is not None
    port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cpu", type=int, default=-1)
    parser.add_argument("--contacts", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--tls-dir", default="")
    args = parser.parse_args()
    if args.cpu >= 0:
        pin(args.cpu)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    asyncio.run(serve(args.contacts, args.rows, args.tls_dir))


if __name__ == "__main__":
    main()
