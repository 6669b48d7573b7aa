"""A validation fleet on arq and Redis: many worker processes, one ``Client`` each, run
by the command line (``asyncsdk fleet worker|submit|status|export``).

- ``config``: the settings (``FLEET_*`` variables or flags); plain Python.
- ``worker``: the worker's tasks and its arq ``Worker`` (``serve``).
- ``shared_pace``: the fleet's shared pace in Redis (``SharedPace``, a ``SendPolicy``
  each batch's ``check_many(pace=...)`` is given).
- ``submit``: an address file split into batches and enqueued, or a file job.
- ``export``: a run's progress, and its outcomes as ``check-many``'s result CSV.
- ``store``: what the fleet keeps in Redis (outcomes, job handles, the shared pause).
- ``commands``: the commands behind ``asyncsdk.cli.fleet``'s flags.
- ``harness``: a throwaway redis-server and worker processes on 127.0.0.1 (tests and
  benchmarks).

Needs the ``fleet`` extra (``pip install 'asyncsdk[fleet]'``) for every module but
``config``; this package imports nothing itself, and the library never imports it.
"""
