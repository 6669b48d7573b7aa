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

__all__ = ["log_attempt", "log_give_up", "log_retry", "logger", "setup_logging_from_env"]

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


# --- the lines the transport logs --------------------------------------------------------
logger = logging.getLogger(C.LOGGER_NAME)


def log_attempt(method: str, shown_url: str, outcome: int | str, elapsed: float,
                attempt: int) -> None:
    """The DEBUG line of one attempt (``shown_url``: already redacted)."""
    logger.debug("%s %s -> %s in %.1f ms (attempt %d)", method, shown_url, outcome,
                 elapsed * 1000.0, attempt)


def log_retry(method: str, shown_url: str, reason: str, delay: float, attempt: int) -> None:
    """The INFO line of a retry: why, and the wait before it."""
    logger.info("Retrying %s %s in %.2f seconds (attempt %d: %s)", method, shown_url,
                delay, attempt, reason)


def log_give_up(method: str, shown_url: str, reason: str, attempts: int) -> None:
    """The WARNING line of a call given up after ``attempts`` attempts."""
    logger.warning("Giving up %s %s after %d attempt(s): %s", method, shown_url, attempts,
                   reason)
