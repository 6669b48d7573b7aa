"""``client.customers``."""

from __future__ import annotations

from ._base import Resource


class Customers(Resource):
    """Operations of the customers area (not implemented yet)."""

    __slots__ = ()
