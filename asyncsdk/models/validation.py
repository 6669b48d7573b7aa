"""Models of email validation: one check, bulk outcomes, and rows of a job's result."""

from __future__ import annotations

import attrs

from .._convert import ResponseModel
from .._errors import SDKError
from .codes import Verdict

__all__ = ["CheckOutcome", "CheckResult", "EmailRow"]


@attrs.frozen(kw_only=True)
class CheckResult(ResponseModel):
    """The verdict on one address (``validation.check``).

    ``result`` is a ``Verdict`` (a plain str for a verdict this library does not know);
    ``role`` is True when the address belongs to a role (sales@, support@) not a person.
    """

    email: str
    status: str
    result: Verdict | str | None = None
    role: bool | None = None
    error: str | None = None


@attrs.frozen(kw_only=True)
class CheckOutcome:
    """What became of one input of ``check_many``: a ``result`` or an ``error``.

    ``attempted`` is False for inputs not sent because the run stopped early (failed
    authentication or credit); their ``error`` (of the same class as the failure that
    stopped the run, which is its ``__cause__``) says why. An input that is not an
    address has an ``InvalidInputError`` and ``attempted`` True: it was dealt with, and
    never sent. ``email`` is the input as given (its ``repr`` if it was not a string).
    """

    email: str
    result: CheckResult | None = None
    error: SDKError | None = None
    attempted: bool = True

    @property
    def ok(self) -> bool:
        """True when the check produced a result."""
        return self.result is not None


@attrs.frozen(kw_only=True)
class EmailRow:
    """One row of a job's ``emaillist.csv``.

    ``role_based`` is None when the file's ``Role Based Emails`` value is none of
    true/false, yes/no, y/n, 1/0 (any case): one odd flag never fails a whole result.
    """

    email: str
    name: str
    status: Verdict | str
    role_based: bool | None
