"""Sentry (the real ``sentry-sdk`` with its aiohttp integration) around asyncsdk, with
``send_default_pii`` off and on: the envelopes it would send (captured in memory by a
transport of the test's own) hold no credential in any form: not in the HTTP
breadcrumbs' ``http.query`` attached to every error event, not in the ``http.client``
spans, not in the events of the library's errors (their frames' local variables
included). The service still received every credential.

The sandbox is an aiohttp server in this process, so Sentry's integration also makes
``http.server`` transactions of what the *service* received (credentials included, as
the interface sends them): those are the fake service's, and are dropped before they
are sent (``before_send_transaction``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import sentry_sdk
from integration_helpers import assert_the_service_got_them, credentials_in, exercise, sandbox
from sentry_sdk.envelope import Envelope
from sentry_sdk.integrations.aiohttp import AioHttpIntegration
from sentry_sdk.transport import Transport

from asyncsdk.testing import VirtualClock


class InMemory(Transport):
    """Keeps every envelope instead of sending it."""

    sent: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        InMemory.sent.append(envelope)


def _not_the_services(event: Any, _: Any) -> Any:
    trace = event.get("contexts", {}).get("trace", {})
    return None if trace.get("op") == "http.server" else event


#: sentry-sdk 2.x deprecates ``send_default_pii`` for ``data_collection``; both still act.
pytestmark = pytest.mark.filterwarnings("ignore:The send_default_pii option is deprecated")


@pytest.fixture(params=[False, True], ids=["pii-off", "pii-on"])
def envelopes(request: pytest.FixtureRequest) -> Iterator[list[Envelope]]:
    InMemory.sent = []
    sentry_sdk.init(dsn="https://public@o0.ingest.sentry.io/0", transport=InMemory,
                    send_default_pii=request.param, traces_sample_rate=1.0,
                    integrations=[AioHttpIntegration()], default_integrations=False,
                    before_send_transaction=_not_the_services)
    try:
        yield InMemory.sent
    finally:
        sentry_sdk.get_client().close()
        sentry_sdk.get_global_scope().set_client(None)  # inert for the other tests


def _payloads(envelopes: list[Envelope], kind: str) -> list[dict[str, Any]]:
    return [item.payload.json for envelope in envelopes for item in envelope.items
            if item.type == kind and item.payload.json is not None]


async def test_envelopes_hold_no_credential(envelopes: list[Envelope]) -> None:
    with sentry_sdk.isolation_scope(), sentry_sdk.start_transaction(name="job", op="task"):
        async with sandbox() as sb, sb.client(clock=VirtualClock()) as client:
            errors = await exercise(client, sb)
            for error in errors:
                sentry_sdk.capture_exception(error)
            served = assert_the_service_got_them(sb.requests)
    sentry_sdk.flush()
    events = _payloads(envelopes, "event")
    (transaction,) = _payloads(envelopes, "transaction")
    assert len(events) == len(errors) == 3
    crumbs = [c for c in events[-1]["breadcrumbs"]["values"] if c.get("type") == "http"]
    assert len(crumbs) >= served >= 15
    assert {c["data"]["http.query"] for c in crumbs} >= {  # the query, without credentials
        "email=ann@example.com&timeout=30", ""}
    spans = [s for s in transaction["spans"] if s["op"] == "http.client"]
    assert len(spans) >= served
    frames = [f for e in events for x in e["exception"]["values"]
              for f in x["stacktrace"]["frames"]]
    assert any(f.get("vars") for f in frames)  # local variables are sent, and clean
    assert not credentials_in(*events, transaction, *crumbs)
    assert not credentials_in(b"".join(e.serialize() for e in envelopes).decode(
        "utf-8", "replace"))  # the bytes that would be sent
    json.dumps(events)
