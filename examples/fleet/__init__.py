"""A validation fleet on arq and Redis: many worker processes, one ``Client`` each.

- ``worker.py``: the arq worker (``arq examples.fleet.worker.WorkerSettings``).
- ``producer.py``: splits an address file into batches and enqueues them.
- ``store.py``: what the fleet keeps in Redis (outcomes, job handles, the shared pause).
- ``harness.py``: starts redis-server and workers on 127.0.0.1 (the test and the bench).
- ``bench.py``: throughput of 1 vs 2 workers against the sandbox.

Needs the ``fleet`` extra (``pip install 'asyncsdk[fleet]'``); the library itself never
imports arq or redis.
"""
