"""The service limit over HTTP, for a sandbox that code outside its process talks to
(``asyncsdk sandbox``, ``threaded_sandbox``): ``GET /sandbox/limit`` says the limit of
every key, ``PUT /sandbox/limit`` with a JSON ``RateLimit`` (``{"rate": 100, "burst":
10, "retry_after": null, "max_in_flight": 8}``; ``null``: no limit) changes it from the
next request on, as ``sb.limits.set`` does. Not a path of the service: the sandbox's
own, answering no API key."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from asyncsdk import InvalidInputError

from ._limits import RateLimit, RateLimits

__all__ = ["LIMIT_PATH", "limit_from_json", "limit_routes"]

LIMIT_PATH = "/sandbox/limit"
_FIELDS = ("rate", "burst", "retry_after", "max_in_flight")


def limit_from_json(data: Any) -> RateLimit | None:
    """The ``RateLimit`` a JSON document gives (None for ``null``).

    Raises:
        InvalidInputError: not an object of ``rate``, ``burst`` and optionally
            ``retry_after`` and ``max_in_flight``, or a value out of its range (the error
            names the field).
    """
    if data is None:
        return None
    if not isinstance(data, dict):
        raise InvalidInputError("limit: expected a JSON object (rate, burst, retry_after, "
                                "max_in_flight) or null", field="limit")
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise InvalidInputError(f"{unknown[0]}: not a field of a limit (expected "
                                f"{', '.join(_FIELDS)})", field=str(unknown[0]))
    for field in ("rate", "burst"):
        if field not in data:
            raise InvalidInputError(f"{field}: required", field=field)
    return RateLimit(**data)


def describe_json(limit: RateLimit | None) -> dict[str, Any] | None:
    """``limit`` as the JSON ``limit_from_json`` reads."""
    if limit is None:
        return None
    return {"rate": limit.rate, "burst": limit.burst, "retry_after": limit.retry_after,
            "max_in_flight": limit.max_in_flight}


def limit_routes(limits: RateLimits) -> list[web.RouteDef]:
    """``GET`` and ``PUT`` of ``LIMIT_PATH`` on ``limits``."""

    async def show(request: web.Request) -> web.Response:
        return web.json_response({"limit": describe_json(limits.get())})

    async def change(request: web.Request) -> web.Response:
        try:
            limit = limit_from_json(json.loads(await request.text()))
        except json.JSONDecodeError:
            return web.json_response({"detail": "expected a JSON limit"}, status=400)
        except InvalidInputError as refused:
            return web.json_response({"detail": str(refused), "field": refused.field},
                                     status=400)
        limits.set(limit)
        return web.json_response({"limit": describe_json(limit)})

    return [web.get(LIMIT_PATH, show), web.put(LIMIT_PATH, change)]
