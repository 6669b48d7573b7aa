"""The ``asyncsdk`` command line (``main``): an application on the library's public face.

``parser`` (the flags), ``inputs`` (the files of addresses), ``outputs`` (the result CSV
and the summary), ``progress``, ``common``, and one module per command family."""

from .app import build_parser, main

__all__ = ["build_parser", "main"]
