"""The library's log lines, and logging switched on from the environment.

**What is logged** (``logging.getLogger("asyncsdk")``, every URL redacted and scrubbed):
one DEBUG line per attempt (method, URL, status or failure, elapsed, attempt); each
retry at INFO with its reason and wait, as ``Retrying GET <url> in 0.50 seconds
(attempt 2: HTTP 503)``; a call given up at WARNING (``Giving up GET <url> after 3
attempt(s): ...``, the attempts sent; a stream broken off: ``StreamedResponse``). The
logger propagates, so an application that configures logging (``logging.basicConfig()``)
gets them with its own records, and has a ``NullHandler``:
a program that configured nothing is not shown the library's warnings by Python's
last-resort handler.

**ASYNCSDK_LOG** (as ``OPENAI_LOG`` and ``STRIPE_LOG``): the first ``Client`` built in a
process reads the variable and, when it says ``debug`` or ``info`` (any case,
surrounding spaces ignored), sets the logger's level and attaches one stderr handler
at that level. Nothing happens at import, and later clients do not read it again.
Another value is ignored with one ``RuntimeWarning``.

**Each line once.** The variable's handler prints only while the application has not
configured logging: once a handler of the application takes the record on its way up
(one of the root logger's: ``logging.basicConfig()``; or one the application put on
``asyncsdk`` or on a logger below it: ``dictConfig``'s ``loggers``), before or after
the first client, that handler prints it, in the application's format, and the
variable's handler steps aside. So ``ASYNCSDK_LOG=debug`` with ``basicConfig()`` prints
each line once, and the variable then only sets the level. "Takes" is the handler's
level (its filters are not run twice).
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
    handler = _VariableHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.setLevel(level)
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler


class _VariableHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``ASYNCSDK_LOG`` attaches: prints a record unless the application's
    logging (a handler of the root logger, which the record reaches as it propagates)
    prints it (module docstring: each line once)."""

    def emit(self, record: logging.LogRecord) -> None:
        if not _printed_by_the_application(record, self):
            super().emit(record)


def _printed_by_the_application(record: logging.LogRecord, own: logging.Handler) -> bool:
    """True when another handler than ``own`` (and the library's ``NullHandler``) whose
    level takes ``record`` is on its way: its logger's, then each parent's while the
    logger propagates, as ``Logger.callHandlers`` goes."""
    source: logging.Logger | None = logging.getLogger(record.name)
    while source is not None:
        if any(handler is not own and not isinstance(handler, logging.NullHandler)
               and record.levelno >= handler.level for handler in source.handlers):
            return True
        source = source.parent if source.propagate else None
    return False


# --- the lines the transport logs --------------------------------------------------------
logger = logging.getLogger(C.LOGGER_NAME)
logger.addHandler(logging.NullHandler())  # no last-resort lines in an unconfigured program


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
