"""The ``asyncsdk`` command line (``main``): an application on the library's public face.

``parser`` (the flags), ``inputs`` (the files of addresses, also the fleet producer's
reader), ``outputs`` (the result CSV and the summary), ``previous``, ``lock`` and
``dedupe`` (``check-many``'s resume, output lock and ``--dedupe``), ``join``
(``validate``'s input columns joined to the job's result), ``progress``,
``common``, and one module per command family."""

from .app import build_parser, main

__all__ = ["build_parser", "main"]
