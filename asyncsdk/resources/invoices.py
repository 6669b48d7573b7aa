"""``client.invoices``."""

from __future__ import annotations

from ._base import Resource


class Invoices(Resource):
    """Operations of the invoices area (not implemented yet)."""

    __slots__ = ()
