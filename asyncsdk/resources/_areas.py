"""The areas of the interface: one table says, per area, which ``Client`` argument (and
environment variable) sets its URL, where its requests carry the credentials, and
whether it answers ``status: fail`` in the body (validation, mail) rather than by HTTP
status. A new area, or a new credential placement, is one row here; the engine reads
these attributes without knowing any area (``_core.operation.AreaRules``)."""

from __future__ import annotations

import enum

from .. import _constants as C
from .._core import (
    KEY_AND_USER_IN_FORM,
    KEY_AND_USER_IN_QUERY,
    KEY_IN_QUERY,
    Placement,
)

__all__ = ["Area"]


class Area(enum.Enum):
    """A part of the interface: its URL argument, credential placement, and whether it
    says ``status: fail`` in the body rather than by HTTP status."""

    #            URL argument       credentials             fail in the body
    CONTACTS = ("contacts_url", KEY_IN_QUERY, False)
    CRM = ("crm_url", KEY_IN_QUERY, False)
    INVOICING = ("invoicing_url", KEY_IN_QUERY, False)
    VALIDATION = ("validation_url", KEY_AND_USER_IN_QUERY, True)
    MAIL = ("mail_url", KEY_AND_USER_IN_FORM, True)

    def __init__(self, argument: str, placement: Placement, answers_in_body: bool) -> None:
        #: The ``Client`` argument that sets this area's URL.
        self.argument = argument
        #: The environment variable that sets it (``ASYNCSDK_<ARGUMENT>``).
        self.env_var = C.ENV_PREFIX + argument.upper()
        #: Where this area's requests carry the credentials.
        self.placement = placement
        #: Validation and mail say fail in the body (``status: fail``), not by HTTP.
        self.answers_in_body = answers_in_body
