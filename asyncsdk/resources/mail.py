"""``client.mail``: send one transactional HTML mail."""

from __future__ import annotations

from typing import Any

from .._checks import check_one_address, check_single_line, check_text
from .._core import CallOptions, Operation
from .._errors import InvalidInputError
from ..models.mail import MailResult
from ._areas import Area
from ._base import ExtraHeaders, ExtraQuery, Resource, extras_of


def _not_success(data: Any) -> str | None:
    """Why a 2xx answer whose ``status`` is not ``success`` (a gateway's ``error``, a
    blank one; ``fail`` is a refusal, raised before) is no result: it did not say that
    the mail went out, nor that it did not (None: it says ``success``, or it is of
    another shape, which reading it as a ``MailResult`` reports)."""
    if not isinstance(data, dict) or "status" not in data:
        return None
    status = data["status"]
    if isinstance(status, str) and status.strip().lower() == "success":
        return None
    return (f'MailResult at $.status: expected "success", got {status!r}; the service '
            "answered (2xx) without saying what it did: the mail may have been sent")


#: Sending a mail is not safe to repeat: sent at most once (DESIGN §3).
SEND = Operation("mail.send", "POST", Area.MAIL, "/api/v1/mail/send/", safe_to_repeat=False,
                 check_answer=_not_success)


class Mail(Resource):
    """Transactional mail."""

    __slots__ = ()

    async def send(
        self,
        *,
        sender: str,
        to: str,
        subject: str,
        html: str,
        request_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> MailResult:
        """Send one HTML mail, at most once.

        The request is never repeated once it may have reached the service: when the
        outcome is unknown (the connection broke, a 5xx, a timeout) an
        ``APIConnectionError`` with ``may_have_been_sent=True`` (or the ``ServerError``)
        is raised and the caller decides whether to send again.

        Args:
            sender: the ``from`` address (its domain must be verified at the service);
                like ``to``, one line (no line separator, even in a quoted part).
            to: the recipient's address: one (a list such as ``"a@x.com,b@y.com"`` is
                refused; send one mail per recipient).
            subject: one line of text (no CR, LF or other control characters).
            html: the HTML body, non-empty.
            request_timeout: this call's timeout, overriding the client's.
            extra_headers, extra_query: headers and query fields added to the request
                (the form takes none; a credential field is refused).

        Returns:
            The ``MailResult`` (``status`` says ``success``; ``message`` is
            ``MailState.SEND`` or ``QUEUED``).

        Raises:
            InvalidInputError: a bad argument; nothing was sent.
            UnverifiedSenderError, AuthenticationError, InsufficientCreditError,
                InvalidRequestError, APIError: the service refused;
            APIConnectionError: no answer (see ``may_have_been_sent``).
            ResponseDecodeError: an answer that does not say ``success`` (nor ``fail``),
                or cannot be read: the mail may have been sent.
        """
        # Both go into the mail's header lines: a quoted part may hold U+2028/U+2029,
        # which end a line as much as CR/LF do (refused, as in the subject).
        check_single_line(check_one_address(sender, "sender"), "sender")
        check_single_line(check_one_address(to, "to"), "to")
        check_single_line(subject, "subject")
        if not subject.strip():
            raise InvalidInputError("subject: expected a non-empty line of text",
                                    field="subject")
        check_text(html, "html")
        if not html.strip():
            raise InvalidInputError("html: expected non-empty HTML text", field="html")
        form = {"from": sender, "to": to, "subject": subject, "message": html}
        extras = extras_of(extra_headers, extra_query)
        result: MailResult = await self._engine.request(CallOptions(
            SEND, form=form, timeout=request_timeout, model=MailResult, extras=extras))
        return result
