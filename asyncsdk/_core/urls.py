"""Each area's base URL and the URL of an operation (``BaseUrls``); a base URL's
``user:password@`` part is taken out of it (``split_login``): it is a credential, sent
as ``Authorization: Basic`` by the library's middleware, last, like the others."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from yarl import URL

from .. import _constants as C
from .._errors import ConfigurationError
from .operation import Operation

__all__ = ["BaseUrls", "split_login"]


class BaseUrls:
    """Each area's base URL (None: not configured), and the URL of an operation."""

    __slots__ = ("_by_argument", "by_area")

    def __init__(self, by_area: Mapping[Any, str | None]) -> None:
        self.by_area = dict(by_area)
        #: The same by each area's argument name (a str hashes in C, an Enum in Python).
        self._by_argument = {area.argument: url for area, url in by_area.items()}

    def of(self, op: Operation, path_id: str | int | None = None) -> str:
        """Absolute URL of ``op`` (no query), with ``path_id`` put into ``{id}``.

        Raises:
            ConfigurationError: no URL is configured for the operation's area.
        """
        base = self._by_argument.get(op.area.argument)
        if not base:
            raise ConfigurationError(
                f"{op.name}: no URL for this area: pass {op.area.argument}= or base_url= to "
                f"Client, or set {op.area.env_var} or {C.ENV_BASE_URL}",
                field=op.area.argument,
            )
        if path_id is not None:
            return base + op.path.replace("{id}", quote(str(path_id), safe=""))
        return base + op.path


def split_login(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and that login as the value of an
    ``Authorization: Basic`` header (None: the URL has none), as aiohttp would send it
    (RFC 7617, latin-1)."""
    parsed = URL(url)
    if parsed.user is None and parsed.password is None:
        return url, None
    pair = f"{parsed.user or ''}:{parsed.password or ''}".encode("latin-1", "replace")
    return str(parsed.with_user(None)), "Basic " + base64.b64encode(pair).decode("ascii")
