"""Models of email validation: one check, bulk outcomes, and rows of a job's result."""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

from .._errors import SDKError
from ._base import ResponseModel, WireForm
from .codes import Verdict

__all__ = ["CheckFailure", "CheckOutcome", "CheckResult", "CheckSuccess", "EmailRow"]


@attrs.frozen(kw_only=True)
class CheckResult(ResponseModel):
    """The verdict on one address (``validation.check``).

    ``result`` is a ``Verdict``, always (an unknown value of it for a verdict this
    library does not know: ``Verdict("Risky") == "Risky"``, see
    ``asyncsdk.models.codes``); a success answer without one is a
    ``ResponseDecodeError``. ``role`` is True when the address belongs to a role
    (sales@, support@) not a person.
    """

    email: str
    status: str
    result: Verdict
    role: bool | None = None
    error: str | None = None


@attrs.frozen(kw_only=True)
class CheckSuccess(WireForm):
    """An input of ``check_many`` that got a ``result`` (``ok`` is True)."""

    email: str
    result: CheckResult
    error: None = None
    attempted: bool = True

    @property
    def ok(self) -> Literal[True]:
        """True: the check produced a result."""
        return True


def _error_key(error: SDKError) -> tuple[type[SDKError], str]:
    return type(error), str(error)


@attrs.frozen(kw_only=True)
class CheckFailure(WireForm):
    """An input of ``check_many`` that got an ``error`` instead (``ok`` is False).

    ``attempted`` is False for inputs not sent because the run stopped early (failed
    authentication or credit, the client closed under the run or missing a credential
    or URL); their ``error`` (of the same class as the failure that stopped the run,
    which is its ``__cause__``) says why. An input that is not an address has an
    ``InvalidInputError`` and ``attempted`` True: it was dealt with, and never sent.
    """

    email: str
    # Compared by class and text (what ``to_dict`` keeps), not by identity as an
    # exception is: ``CheckFailure.from_dict(f.to_dict()) == f``.
    error: SDKError = attrs.field(eq=_error_key)
    result: None = None
    attempted: bool = True

    @property
    def ok(self) -> Literal[False]:
        """False: the check ended in ``error``."""
        return False


#: What became of one input of ``check_many``: a ``CheckSuccess`` (``result``) or a
#: ``CheckFailure`` (``error``). ``email`` is the input as given (its ``repr`` if it was
#: not a string). ``if outcome.ok:`` narrows it for type checkers, so
#: ``outcome.result.result`` type-checks inside; ``isinstance(x, CheckOutcome)`` works.
CheckOutcome: TypeAlias = CheckSuccess | CheckFailure


@attrs.frozen(kw_only=True)
class EmailRow(WireForm):
    """One row of a job's ``emaillist.csv`` (``status`` may be an unknown ``Verdict``).

    ``role_based`` is None when the file's ``Role Based Emails`` value is none of
    true/false, yes/no, y/n, 1/0 (any case): one odd flag never fails a whole result.
    """

    email: str
    name: str
    status: Verdict
    role_based: bool | None
