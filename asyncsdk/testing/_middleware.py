"""The sandbox's middlewares: request tracking, the service's rate limits, fault
injection, and JSON answers to handler refusals and router misses (outermost first, in
that order)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from . import _texts
from ._faults import Faults, apply_fault, request_key, retry_after_header
from ._limits import RateLimits
from ._mail import form_fields
from ._records import RecordedRequest
from ._resources import Reject
from ._state import SandboxState

__all__ = ["answer_errors", "inject_faults", "limit_rates", "track"]

RECORD_KEY: Any = request_key("asyncsdk_sandbox_record", RecordedRequest)


def track(state: SandboxState) -> Middleware:
    """Count requests in flight and (unless ``record=False``) record them."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        task = asyncio.current_task()
        if task is not None:
            state.handlers.add(task)
        try:
            record: RecordedRequest | None = None
            if state.settings.record:
                record = RecordedRequest(
                    method=request.method,
                    path=request.path,
                    query=dict(request.query),
                    headers=dict(request.headers),
                    body=await request.read() if request.body_exists else b"",
                    time=asyncio.get_running_loop().time(),
                )
                state.requests.append(record)
                request[RECORD_KEY] = record
            response = await handler(request)
            if record is not None and not _closing(request):  # dropped: nothing answered
                record.status = response.status
            return response
        finally:
            state.in_flight -= 1
            if task is not None:
                state.handlers.discard(task)

    return middleware


FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def limit_rates(limits: RateLimits) -> Middleware:
    """Answer 429 to a request its key's limit refuses (``Retry-After`` as the limit
    says; none for the cap in flight), before anything runs: it spends nothing. The key
    is the query's ``api`` or ``api_key``, or mail's form ``api``; a request without one
    (a hosted file) is not limited."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        key = await _api_key(request)
        if key is None:
            return await handler(request)
        refusal = limits.admit(key)
        if refusal is not None:
            return web.json_response({"detail": _texts.THROTTLED}, status=429,
                                     headers=retry_after_header(refusal.retry_after))
        try:
            return await handler(request)
        finally:
            limits.release(key)

    return middleware


async def _api_key(request: web.Request) -> str | None:
    key = request.query.get("api") or request.query.get("api_key")
    if not key and request.method == "POST" and request.content_type in FORMS:
        key = str((await form_fields(request)).get("api") or "")
    return key or None


def inject_faults(faults: Faults) -> Middleware:
    """Spoil the requests ``faults`` holds a fault for (and note it on their record)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        fault = faults.take(request.method, request.path)
        if fault is None:
            return await handler(request)
        faults.applied.append((request.method, request.path, fault.kind))
        record: RecordedRequest | None = request.get(RECORD_KEY)
        if record is not None:
            record.fault = fault.kind.value
        return await apply_fault(fault, request, handler)

    return middleware


@web.middleware
async def answer_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn handler refusals and router misses into JSON answers."""
    try:
        return await handler(request)
    except Reject as reject:
        return reject.response
    except web.HTTPNotFound:
        return web.json_response({"detail": _texts.NOT_FOUND_DETAIL}, status=404)
    except web.HTTPMethodNotAllowed as exc:
        detail = f'Method "{request.method}" not allowed.'
        return web.json_response(
            {"detail": detail}, status=405, headers={"Allow": ",".join(sorted(exc.allowed_methods))}
        )


def _closing(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()
