"""``client.products``."""

from __future__ import annotations

from ._base import Resource


class Products(Resource):
    """Operations of the products area (not implemented yet)."""

    __slots__ = ()
