"""Transactional mail: ``POST /api/v1/mail/send/`` with form data (urlencoded, as the
interface shows, or ``multipart/form-data``, its text fields read from the body the
recorder has already read).

Answers HTTP 200 JSON. Order of checks: method (anything but POST: "Request method is
not correct."), every form field present, non-empty, and ``from``/``to`` well-formed
("Required parameter missing or invalid."), credentials, the sender's domain verified
(``Sandbox.verify_domain``), credit (one per mail). Success:
``{"status": "success", "message": "Queued" | "Send", "id": "msg-000001"}``.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from . import _texts
from ._records import SentMail, multipart_fields
from ._resources import Reject
from ._state import STATE_KEY

__all__ = ["ROUTES", "form_fields"]

FIELDS = ("api", "username", "from", "to", "subject", "message")


def _fail(error: str) -> Reject:
    return Reject(web.json_response({"status": "fail", "error": error}))


async def mail_send(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    if request.method != "POST":
        raise _fail(_texts.METHOD_NOT_CORRECT)
    form = await form_fields(request)
    values: dict[str, str] = {}
    for name in FIELDS:
        value = form.get(name)
        if not isinstance(value, str) or not value.strip():
            raise _fail(_texts.REQUIRED)
        values[name] = value
    rules = state.rules
    if not (rules.is_well_formed(values["from"]) and rules.is_well_formed(values["to"])):
        raise _fail(_texts.REQUIRED)
    account = state.account(values["api"], values["username"])
    if account is None:
        raise _fail(_texts.AUTH_FAILED)
    if values["from"].rpartition("@")[2].lower() not in state.verified_domains:
        raise _fail(_texts.UNVERIFIED_SENDER)
    if not account.can_spend():
        raise _fail(_texts.NO_CREDIT)
    account.spend()
    mail_id = f"msg-{state.next_id('mail'):06d}"
    mail_state = state.settings.mail_state
    state.outbox.append(
        SentMail(
            id=mail_id,
            sender=values["from"],
            to=values["to"],
            subject=values["subject"],
            message=values["message"],
            username=account.username,
            state=mail_state,
        )
    )
    return web.json_response({"status": "success", "message": mail_state, "id": mail_id})


async def form_fields(request: web.Request) -> Mapping[str, object]:
    """The request's form fields (empty unless the body is a form). A multipart body is
    read from its bytes: the recording middleware has read them, and ``request.post()``
    would find the stream consumed."""
    if request.content_type == "multipart/form-data":
        return multipart_fields(await request.read(), request.headers.get("Content-Type", ""))
    return await request.post()


# Every method, so that a GET gets the service's own error.
ROUTES = [web.route("*", "/api/v1/mail/send/", mail_send)]
"""The mail route."""
