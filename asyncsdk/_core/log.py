"""Logging switched on from the environment: ``ASYNCSDK_LOG=debug`` (or ``info``).

As ``OPENAI_LOG`` and ``STRIPE_LOG`` do: the first ``Client`` built in a process reads
the variable and, when it says ``debug`` or ``info`` (any case, surrounding spaces
ignored), attaches one stderr handler at that level to the ``asyncsdk`` logger and sets
the logger's level. Nothing happens at import, and later clients do not read it again.
The logger still propagates, so an application that configures logging itself needs
no variable (and, if it also logs to stderr at that level, sees each line twice: unset
the variable then). Another value is ignored with one ``RuntimeWarning``. DEBUG lines
are redacted like everything else (one per attempt: method, redacted URL, status,
elapsed, attempt).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Mapping

from .. import _constants as C

__all__ = ["setup_logging_from_env"]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}
_FORMAT = "[%(asctime)s %(name)s %(levelname)s] %(message)s"
_done = False


def setup_logging_from_env(environ: Mapping[str, str] | None = None) -> logging.Handler | None:
    """Apply ``ASYNCSDK_LOG`` once per process; the handler attached, or None.

    Args:
        environ: the environment to read (default: ``os.environ``).
    """
    global _done
    if _done:
        return None
    _done = True
    value = (os.environ if environ is None else environ).get(C.ENV_LOG)
    if value is None or not value.strip():
        return None
    level = _LEVELS.get(value.strip().lower())
    if level is None:
        warnings.warn(f"{C.ENV_LOG}={value[:20]!r} is not understood: use debug or info",
                      RuntimeWarning, stacklevel=3)
        return None
    logger = logging.getLogger(C.LOGGER_NAME)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.setLevel(level)
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler
