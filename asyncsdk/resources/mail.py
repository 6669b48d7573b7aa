"""``client.mail``."""

from __future__ import annotations

from ._base import Resource


class Mail(Resource):
    """Operations of the mail area (not implemented yet)."""

    __slots__ = ()
