"""``client.validation``: check one address (``resource``), many (``check_many``), and
validation jobs (``jobs``: status, wait; ``results``, ``rows`` and ``readers``: the
result file streamed)."""

from .resource import Validation

__all__ = ["Validation"]
