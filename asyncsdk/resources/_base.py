"""What every resource class shares: the engine, id and argument checks, and the five
request shapes of the CRUD areas (list, get, create, update, delete).

Safety (DESIGN §3): creates (POST) are not safe to repeat and are sent at most once when
the request may have reached the service; GET, PUT and DELETE are retried (a PUT of the
same body and a DELETE are idempotent). A retried DELETE whose first attempt did reach
the service may be answered 404, which is raised as ``NotFoundError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple, TypeVar

import attrs

from .._checks import check_id
from .._core import CallOptions, Engine, Extras, Operation
from .._errors import InvalidInputError, ResponseDecodeError
from .._serde.converter import encode
from ..models._base import InputModel
from ._areas import Area

M = TypeVar("M")

#: An id as a path segment: an int >= 0 or a non-empty text without ``/``.
ResourceId = int | str
#: ``extra_headers=`` of a call: header name to value.
ExtraHeaders = Mapping[str, str]
#: ``extra_query=`` of a call: field name to value (text or a finite number).
ExtraQuery = Mapping[str, "str | int | float"]


class Limits(NamedTuple):
    """What one call sets for itself: its time limits (None: the client's) and what it
    adds to its requests (``Extras``, None: nothing)."""

    timeout: float | None
    attempt_timeout: float | None
    extras: Extras | None = None


def extras_of(extra_headers: ExtraHeaders | None, extra_query: ExtraQuery | None,
              own: tuple[tuple[str, str], ...] = ()) -> Extras | None:
    """A call's ``Extras`` (None: none); ``InvalidInputError`` for extras that are not
    headers or query fields, that would replace a credential, or that aiohttp or yarl
    could not send as given (``_core.operation.Extras``), or a query field of ``own``
    (each: a field the call sets from a checked argument, and that argument's name):
    replaced, the call would ask about another address, file or job than its argument
    names, unchecked, and read the answer as its argument's."""
    if extra_headers is None and extra_query is None:
        return None
    extras = Extras(extra_headers, extra_query)
    for field, argument in own:
        if extras.query is not None and field in extras.query:
            raise InvalidInputError(
                f"extra_query: {field!r} is this call's own field, set from {argument}; "
                f"give it as {argument}", field="extra_query")
    return extras


def per_call(request_timeout: float | None, attempt_timeout: float | None,
             extra_headers: ExtraHeaders | None = None,
             extra_query: ExtraQuery | None = None) -> Limits:
    """A call's ``Limits`` from its arguments (``extras_of``)."""
    return Limits(request_timeout, attempt_timeout, extras_of(extra_headers, extra_query))


def check_model(value: object, model: type[M], name: str) -> M:
    """``value`` if it is a ``model`` instance, else ``InvalidInputError`` naming both."""
    if not isinstance(value, model):
        raise InvalidInputError(
            f"{name}: expected a {model.__name__}, got {type(value).__name__}", field=name)
    return value


@attrs.frozen
class CrudOperations:
    """The operations of one area that follows the list/get/create/update/delete shape."""

    list: Operation
    get: Operation
    create: Operation
    update: Operation
    delete: Operation


def crud_operations(name: str, area: Area, collection: str) -> CrudOperations:
    """The five operations on ``collection`` (a path ending in ``/``) and ``{id}/`` in it."""
    item = collection + "{id}/"
    return CrudOperations(
        list=Operation(f"{name}.list", "GET", area, collection, safe_to_repeat=True),
        get=Operation(f"{name}.get", "GET", area, item, safe_to_repeat=True),
        create=Operation(f"{name}.create", "POST", area, collection, safe_to_repeat=False),
        update=Operation(f"{name}.update", "PUT", area, item, safe_to_repeat=True),
        delete=Operation(f"{name}.delete", "DELETE", area, item, safe_to_repeat=True),
    )


class Resource:
    """Base of ``client.contacts``, ``client.validation`` and the others."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # --- shared request shapes (each checks its arguments before anything is sent) --
    async def _list(self, op: Operation, out: type[M], limits: Limits) -> list[M]:
        return await self._engine.request(CallOptions(  # type: ignore[no-any-return]
            op, timeout=limits.timeout, attempt_timeout=limits.attempt_timeout, model=out,
            many=True, extras=limits.extras))

    async def _get(self, op: Operation, id: object, out: type[M], limits: Limits) -> M:
        path_id = check_id(id)
        return await self._engine.request(CallOptions(  # type: ignore[no-any-return]
            op, path_id=path_id, timeout=limits.timeout,
            attempt_timeout=limits.attempt_timeout, model=out, extras=limits.extras))

    async def _create(
        self, op: Operation, arg: tuple[str, object], model: type[InputModel],
        out: type[M], limits: Limits,
    ) -> M:
        """POST the model in ``arg`` (its name, its value); ``out`` is the answer."""
        payload = encode(check_model(arg[1], model, arg[0]))
        return await self._send(op, None, payload, out, limits)

    async def _update(
        self, op: Operation, id: object, arg: tuple[str, object], model: type[InputModel],
        out: type[M], limits: Limits,
    ) -> M:
        """PUT the model in ``arg`` (its name, its value) to ``id``."""
        path_id = check_id(id)
        payload = encode(check_model(arg[1], model, arg[0]))
        return await self._send(op, path_id, payload, out, limits)

    async def _send(
        self, op: Operation, path_id: int | str | None, payload: Any, out: type[M],
        limits: Limits,
    ) -> M:
        return await self._engine.request(CallOptions(  # type: ignore[no-any-return]
            op, path_id=path_id, json_body=payload, timeout=limits.timeout,
            attempt_timeout=limits.attempt_timeout, model=out, extras=limits.extras))

    async def _delete(self, op: Operation, id: object, limits: Limits) -> None:
        path_id = check_id(id)
        try:
            await self._engine.request(CallOptions(
                op, path_id=path_id, timeout=limits.timeout,
                attempt_timeout=limits.attempt_timeout, extras=limits.extras))
        except ResponseDecodeError as exc:
            # Any 2xx answer means deleted, whatever its body (the document shows none).
            if exc.status_code is None or not 200 <= exc.status_code < 300:
                raise


class CrudResource(Resource):
    """Base of ``client.contacts``, ``.leads``, ``.customers``, ``.products`` and
    ``.invoices``: ``_ops`` names the area's operations.

    Every method takes ``request_timeout=`` (seconds: the call's whole budget) and
    ``attempt_timeout=`` (seconds one attempt of a safe operation may take before it is
    retried within the budget; not applied to creates) for that one call, and
    ``extra_headers=`` / ``extra_query=`` (headers and query fields added to its
    requests; a credential field, or ``Authorization`` where the base URL has a login,
    is refused); bad arguments raise ``InvalidInputError`` before anything is sent; a
    refusal raises the ``APIError`` subclass of the answer (``NotFoundError`` for 404).
    """

    __slots__ = ()
    _ops: ClassVar[CrudOperations]

    async def delete(
        self, id: ResourceId, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> None:
        """Delete the object ``id``. Any 2xx answer counts as done, whatever its body;
        a retried delete that had already reached the service may raise
        ``NotFoundError``."""
        await self._delete(self._ops.delete, id, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))
