"""What every resource class shares: the transport it sends through."""

from __future__ import annotations

from .._transport import Transport


class Resource:
    """Base of ``client.contacts``, ``client.validation`` and the others."""

    __slots__ = ("_transport",)

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
