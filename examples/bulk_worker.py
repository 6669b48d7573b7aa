"""A bulk-validation worker that survives a restart.

    python examples/bulk_worker.py --sandbox examples/emails.csv results.csv
    python examples/bulk_worker.py https://host/list.csv results.csv   # the real service

It submits the list as a job, writes ``job.to_dict()`` to a state file BEFORE waiting,
and on start resumes the job found there instead of submitting (and paying for) the
list again (a job of another list is not resumed: its result is not this list's). Kill
it while it waits and run it again: it picks the same job up. (With ``--sandbox`` the
service lives in this process and its jobs die with it: a saved job the service no
longer knows is forgotten, with a message, and the list submitted anew.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

import asyncsdk

STATE = Path(os.environ.get("WORKER_STATE", "worker-state.json"))


def load_state() -> dict[str, Any] | None:
    return json.loads(STATE.read_text()) if STATE.exists() else None


def save_state(saved: dict[str, Any]) -> None:
    tmp = STATE.with_suffix(".tmp")
    tmp.write_text(json.dumps(saved))
    os.replace(tmp, STATE)  # atomic: a crash leaves the old state or the new one


def clear_state() -> None:
    STATE.unlink(missing_ok=True)


async def run(client: asyncsdk.Client, file_url: str, output: Path) -> int:
    saved = await asyncio.to_thread(load_state)
    if saved is not None:
        job = client.validation.job_from_dict(saved)
        try:
            await job.status()
        except asyncsdk.JobNotFoundError:  # not this account's, or gone: start again
            print(f"job {job.job_id} is unknown to the service: submitting the list again")
            await asyncio.to_thread(clear_state)
            saved = None
        else:
            if job.file_url not in (None, file_url):  # its result is another list's
                raise SystemExit(f"{STATE} holds job {job.job_id} of another list "
                                 f"({job.file_url}): run this worker on that list to "
                                 f"finish it, or delete {STATE} to submit this one")
            print(f"resuming job {job.job_id}")
    if saved is None:
        job = await client.validation.create_job(file_url)
        await asyncio.to_thread(save_state, job.to_dict())  # before any waiting
        print(f"submitted job {job.job_id}")
    try:
        await job.wait(deadline=3600, on_status=lambda s, t: print(f"  {t:6.1f}s {s}"))
    except asyncsdk.JobFailedError:
        await asyncio.to_thread(clear_state)
        raise
    rows = await job.download(output)
    await asyncio.to_thread(clear_state)  # done: the next run submits a new job
    print(f"{rows} rows -> {output}")
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sandbox", action="store_true")
    parser.add_argument("file", help="URL of the list (with --sandbox: a local file)")
    parser.add_argument("output")
    args = parser.parse_args()
    if args.sandbox:
        from asyncsdk.testing import Sandbox

        async with Sandbox(job_seconds=3) as sandbox, sandbox.client() as client:
            url = args.file
            if not url.startswith("http"):
                url = sandbox.host_file(await asyncio.to_thread(Path(url).read_bytes))
            await run(client, url, Path(args.output))
    else:
        async with asyncsdk.Client() as client:
            await run(client, args.file, Path(args.output))


if __name__ == "__main__":
    asyncio.run(main())
