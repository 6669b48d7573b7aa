"""The settings HTTP recorders need for asyncsdk's requests: ``vcr_config()``.

The library adds the credentials last, below every recorder (README, "Tracing, error
tracking and recording"), so a cassette of its requests holds none. These filters are
the second line: they keep the credential fields out of a cassette whatever made the
request (your own requests with the key, an older asyncsdk), and they make a request
recorded with them match one made without.
"""

from __future__ import annotations

from typing import Any

from asyncsdk import CREDENTIAL_FIELDS

__all__ = ["vcr_config"]


def vcr_config(**overrides: Any) -> dict[str, Any]:
    """Keyword arguments for vcrpy (``vcr.VCR(**vcr_config())``,
    ``vcr.use_cassette(path, **vcr_config())``) and for pytest-recording's
    ``vcr_config`` fixture: the credential fields (``asyncsdk.CREDENTIAL_FIELDS``) are
    dropped from every recorded query and form body, and the ``Authorization`` header
    (a base URL's login) from every recorded request.

    Args:
        **overrides: more vcrpy options, or replacements of these (``record_mode=``,
            ``match_on=``, ``cassette_library_dir=``...).

    Returns:
        A new dict each time.
    """
    fields = sorted(CREDENTIAL_FIELDS)
    config: dict[str, Any] = {
        "filter_query_parameters": list(fields),
        "filter_post_data_parameters": list(fields),
        "filter_headers": ["authorization"],
    }
    config.update(overrides)
    return config
