"""``client.validation``: check one address, check many, and validation jobs."""

from __future__ import annotations

from .._constants import DEFAULT_VALIDITY_TIMEOUT
from .._convert import check_email
from .._errors import APIError, InvalidInputError
from .._transport import Area, Operation
from ..models.validation import CheckResult
from ._base import Resource

CHECK = Operation("validation.check", "GET", Area.VALIDATION, "/api/v1/single/check",
                  safe_to_repeat=True)


def check_validity_timeout(value: object) -> int | float:
    """The ``validity_timeout`` argument, checked: a positive number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidInputError(
            f"validity_timeout: expected a positive number of seconds, got {value!r}",
            field="validity_timeout")
    return value


class Validation(Resource):
    """Email validation: ``check`` one address now, or submit a file as a job."""

    __slots__ = ()

    async def check(
        self,
        email: str,
        *,
        validity_timeout: float = DEFAULT_VALIDITY_TIMEOUT,
        request_timeout: float | None = None,
    ) -> CheckResult:
        """Check one address in real time.

        Args:
            email: the address.
            validity_timeout: the service's ``timeout`` parameter (seconds the check may
                take at the service); not the client's request timeout.
            request_timeout: this call's timeout, overriding the client's.

        Returns:
            The ``CheckResult`` (``result`` is a ``Verdict``, ``role`` a bool).

        Raises:
            InvalidInputError: ``email`` is not an address; nothing was sent.
            InvalidEmailError, AuthenticationError, InsufficientCreditError, APIError:
                the service refused; APIConnectionError: no answer.
        """
        check_email(email, "email")
        params = {"email": email, "timeout": check_validity_timeout(validity_timeout)}
        data = await self._transport.request(CHECK, params=params, timeout=request_timeout)
        result = self._transport.decode(CHECK, data, CheckResult)
        if result.status.lower() == "fail":
            raise APIError("the service answered fail without an error text",
                           operation=CHECK.name, error_text=result.error)
        return result
