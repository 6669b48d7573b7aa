"""URLs as aiohttp sends them, built from parts already encoded: an operation's scheme,
authority and path (``wire_url``, once per URL), and a call's whole URL from those parts
and its encoded query (``url_from_parts``, once per call: parsing or re-encoding a whole
URL per call would cost more than the request's own work)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import cast

from yarl import URL


@functools.lru_cache(maxsize=256)
def wire_url(url: str) -> tuple[str, str, str] | None:
    """``url``'s scheme, authority and path, encoded as aiohttp would send them (for
    ``url_from_parts``: parsing a whole URL per call would cost more);
    None where aiohttp must build it (not absolute, a query or fragment of its own,
    invalid)."""
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        return None
    if not parsed.absolute or parsed.raw_query_string or parsed.raw_fragment or "?" in url:
        return None
    return parsed.scheme, parsed.raw_authority, parsed.raw_path


def built_url(scheme: str, authority: str, path: str, query: str, fragment: str) -> URL:
    """A URL from parts already encoded as aiohttp sends them (yarl's public way)."""
    return URL.build(scheme=scheme, authority=authority, path=path, query_string=query,
                     fragment=fragment, encoded=True)


def _url_from_encoded_parts() -> Callable[[str, str, str, str, str], URL]:
    """yarl's uncached constructor from encoded parts where it exists and builds what
    ``URL.build(..., encoded=True)`` builds (probed here, once), else ``built_url``.

    Why: ``URL.build`` goes through an ``lru_cache`` of 128 entries, and every check
    has a URL of its own (the address is in the query): each call paid a cache miss
    (hashing nine arguments, an insert, an eviction), about three quarters of the
    URL's cost. The probe makes a yarl that changes the function's meaning fall back.
    """
    try:
        from yarl._url import from_parts_uncached as uncached
    except ImportError:  # pragma: no cover - another yarl layout
        return built_url
    probe = ("https", "user@h.example:8443", "/v1/a%20b/c", "email=a%40b.example&k=1", "")
    try:
        made, built = uncached(*probe), built_url(*probe)
    except Exception:  # pragma: no cover - another signature: the public way
        return built_url
    if type(made) is not URL or made != built or str(made) != str(built) or (
            made.raw_parts, made.port, made.query) != (built.raw_parts, built.port, built.query):
        return built_url  # pragma: no cover - another meaning: the public way
    return cast(Callable[[str, str, str, str, str], URL], uncached)


#: ``built_url``'s result, without yarl's cache where the probe allows (``Call.target``).
url_from_parts = _url_from_encoded_parts()
