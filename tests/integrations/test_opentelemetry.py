"""OpenTelemetry's aiohttp instrumentation (the real package) around asyncsdk: the global
instrumentor and its trace config on the caller's session. No span, attribute or event
holds a credential in any form, where before they were in ``http.url``/``url.full`` of
every GET and in the text of a pool wait's ``ConnectionTimeoutError``; the service still
received every credential."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import serve
from integration_helpers import (
    KEY,
    USER,
    assert_the_service_got_them,
    credentials_in,
    exercise,
    sandbox,
)
from opentelemetry.instrumentation.aiohttp_client import (
    AioHttpClientInstrumentor,
    create_trace_config,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import asyncsdk
from asyncsdk.testing import VirtualClock

URL_ATTRIBUTES = ("http.url", "url.full")


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    # Both the old and the stable attribute names, where the process has not chosen yet.
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http/dup")
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


@pytest.fixture
def instrumented(provider: TracerProvider) -> Iterator[None]:
    """The global instrumentor: every ClientSession made meanwhile is traced."""
    AioHttpClientInstrumentor().instrument(tracer_provider=provider)
    try:
        yield
    finally:
        AioHttpClientInstrumentor().uninstrument()


def _urls(spans: tuple[ReadableSpan, ...]) -> list[str]:
    return [str(span.attributes[name]) for span in spans for name in URL_ATTRIBUTES
            if span.attributes and name in span.attributes]


def _everything(spans: tuple[ReadableSpan, ...]) -> list[str]:
    """Every span whole, as the exporter would send it (attributes, events, status)."""
    return [span.to_json() for span in spans]


async def _pool_wait_times_out(client_options: dict[str, Any]) -> list[web.Request]:
    """Two calls on one connection: the second waits for it in the pool and times out
    (aiohttp's ``ConnectionTimeoutError``, whose text quotes the URL it was given)."""
    arrived: list[web.Request] = []
    holding, release = asyncio.Event(), asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        arrived.append(request)
        holding.set()
        await release.wait()
        return web.json_response([])

    async with serve(slow) as base, asyncsdk.Client(
            KEY, USER, base_url=base, max_retries=0, **client_options) as client:
        first = asyncio.ensure_future(client.contacts.list())
        await holding.wait()
        with pytest.raises(asyncsdk.APITimeoutError, match="connecting"):
            await client.contacts.list(request_timeout=0.05)
        release.set()
        await first
    return arrived


@pytest.mark.usefixtures("instrumented")
async def test_the_global_instrumentor_records_no_credential(
        exporter: InMemorySpanExporter) -> None:
    async with sandbox() as sb, sb.client(max_retries=2, clock=VirtualClock()) as client:
        await exercise(client, sb)
        served = assert_the_service_got_them(sb.requests)
    spans = exporter.get_finished_spans()
    client_spans = [s for s in spans if any(
        "/api/v1/" in u for u in _urls((s,)))]
    assert len(client_spans) >= served >= 15  # a span for every request of the library
    assert any("email=ann%40example.com" in u or "email=ann@example.com" in u
               for u in _urls(spans))  # the query is still there, without credentials
    assert not credentials_in(*_everything(spans))


@pytest.mark.usefixtures("instrumented")
async def test_a_pool_wait_timeout_event_quotes_no_credential(
        exporter: InMemorySpanExporter) -> None:
    arrived = await _pool_wait_times_out({"max_connections": 1})
    assert arrived[0].query["api_key"] == KEY
    events = [e for s in exporter.get_finished_spans() for e in s.events
              if e.name == "exception"]
    (event,) = events
    assert event.attributes is not None
    assert event.attributes["exception.type"].endswith("ConnectionTimeoutError")
    assert "Traceback" in str(event.attributes["exception.stacktrace"])
    assert not credentials_in(*_everything(exporter.get_finished_spans()))


async def test_its_trace_config_on_your_session_with_redact_url_as_url_filter(
        exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
    """``create_trace_config(url_filter=asyncsdk.redact_url)`` on the caller's session:
    the library's requests carry no credential anyway, and the filter also redacts a
    request of the caller's own that puts the key in its URL."""
    tracer = create_trace_config(url_filter=asyncsdk.redact_url, tracer_provider=provider)
    async with aiohttp.ClientSession(trace_configs=[tracer]) as session, \
            sandbox() as sb, sb.client(session=session, clock=VirtualClock()) as client:
        await exercise(client, sb)
        async with session.get(f"{sb.base_url}/api/v1/contact/",
                               params={"api_key": KEY}) as mine:  # the caller's own
            assert mine.status == 200
        assert_the_service_got_them(sb.requests)
    spans = exporter.get_finished_spans()
    assert f"{sb.base_url}/api/v1/contact/?api_key=REDACTED" in _urls(spans)
    assert not credentials_in(*_everything(spans))


async def test_a_pool_wait_timeout_on_your_session_quotes_no_credential(
        exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
    tracer = create_trace_config(tracer_provider=provider)
    async with aiohttp.ClientSession(trace_configs=[tracer],
                                     connector=aiohttp.TCPConnector(limit=1)) as session:
        await _pool_wait_times_out({"session": session})
    spans = exporter.get_finished_spans()
    assert [e.name for s in spans for e in s.events] == ["exception"]
    assert not credentials_in(*_everything(spans))


async def test_answer_headers_captured_by_the_tracer_show_no_echoed_credential(
        exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
    """With OpenTelemetry capturing every request and answer header (its
    ``OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_*`` settings), a service that
    echoes the credentials it was sent in headers (the URL quoted, the form's key, the
    key in base64, the base URL's login) has them recorded ``REDACTED``; the library
    reads the answer as before."""

    async def echoing(request: web.Request) -> web.Response:
        form = await request.post()
        key = request.query.get("api_key") or request.query.get("api") or form.get("api")
        echoes = {"Content-Location": str(request.url), "Link": f"<{request.url}>; rel=self",
                  "X-Key": str(key), "X-Json": json.dumps({"key": key}),
                  "X-Key64": base64.b64encode(str(key).encode()).decode(),
                  "X-Login": request.headers.get("Authorization", "none").split()[-1]}
        if request.path.startswith("/api/v1/mail/"):
            return web.json_response({"status": "success", "message": "Queued", "id": "m1"},
                                     headers=echoes)
        if request.path.startswith("/api/v1/single/"):
            return web.json_response({"status": "success", "email": "a@b.com",
                                      "result": "Valid", "role": False}, headers=echoes)
        return web.json_response([], headers=echoes)

    tracer = create_trace_config(tracer_provider=provider, captured_request_headers=[".*"],
                                 captured_response_headers=[".*"])
    raw_headers: list[str] = []

    async def on_request_end(_: object, __: object, params: aiohttp.TraceRequestEndParams) -> None:
        raw_headers.append(repr(params.response.raw_headers))

    raw = aiohttp.TraceConfig()
    raw.on_request_end.append(on_request_end)
    async with serve(echoing) as base, aiohttp.ClientSession(
            trace_configs=[tracer, raw]) as session:
        logged_in = base.replace("http://", "http://me:Pa55w0rd@")
        async with asyncsdk.Client(KEY, USER, base_url=logged_in, session=session) as client:
            assert await client.contacts.list() == []
            assert (await client.validation.check("a@b.com")).result is asyncsdk.Verdict.VALID
            await client.mail.send(sender="me@example.com", to="you@example.org",
                                   subject="s", html="h")
    spans = exporter.get_finished_spans()
    captured = [str(v) for s in spans for k, v in (s.attributes or {}).items()
                if "header" in k]
    assert len(spans) == 3 and sum("REDACTED" in c for c in captured) >= 15
    everything = [*_everything(spans), *raw_headers]
    assert len(raw_headers) == 3 and all("REDACTED" in r for r in raw_headers)
    assert not credentials_in(*everything)
    assert not any("Pa55w0rd" in text or "bWU6UGE1NXcwcmQ" in text for text in everything)


async def test_the_global_instrumentor_capturing_headers_records_no_echo(
        exporter: InMemorySpanExporter, provider: TracerProvider,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The library's own session, traced by the global instrumentor with every answer
    header captured: echoed credentials are recorded ``REDACTED`` (the library tests an
    answer's headers for echoes wherever a trace config can read them; only on its own
    session without one does it leave that test out)."""

    async def echoing(request: web.Request) -> web.Response:
        key = request.query.get("api_key", "")
        return web.json_response([], headers={"Content-Location": str(request.url),
                                              "X-Key": key})

    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_RESPONSE", ".*")
    AioHttpClientInstrumentor().instrument(tracer_provider=provider)
    try:
        async with serve(echoing) as base, asyncsdk.Client(KEY, USER, base_url=base) as client:
            assert await client.contacts.list() == []
    finally:
        AioHttpClientInstrumentor().uninstrument()
    spans = exporter.get_finished_spans()
    captured = [str(v) for s in spans for k, v in (s.attributes or {}).items()
                if "header" in k]
    assert len(spans) == 1 and sum("REDACTED" in c for c in captured) >= 2
    assert not credentials_in(*_everything(spans))
