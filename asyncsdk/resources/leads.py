"""``client.leads``."""

from __future__ import annotations

from ._base import Resource


class Leads(Resource):
    """Operations of the leads area (not implemented yet)."""

    __slots__ = ()
