"""``client.contacts``."""

from __future__ import annotations

from ._base import Resource


class Contacts(Resource):
    """Operations of the contacts area (not implemented yet)."""

    __slots__ = ()
