"""Model of transactional mail: the answer to ``mail.send``."""

from __future__ import annotations

import attrs

from ._base import ResponseModel
from .codes import MailState

__all__ = ["MailResult"]


@attrs.frozen(kw_only=True)
class MailResult(ResponseModel):
    """What the service did with one mail (``mail.send``).

    ``status`` is ``"success"``; ``message`` is ``MailState.SEND`` or
    ``MailState.QUEUED`` (an unknown ``MailState`` for a state this library does not
    know);
    ``id`` is the service's message id (text; None if the answer had none).
    """

    status: str
    message: MailState | None = None
    id: str | None = None
    error: str | None = None
