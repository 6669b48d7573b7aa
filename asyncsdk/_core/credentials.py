"""Credentials: where each area puts them, and how they are kept out of every text.

One table decides everything about credentials: ``Area`` names, per part of the
interface, its URL argument (and so its environment variable), its ``Placement`` (which
part of the request carries which ``Secret`` under which field name) and whether it
answers ``status: fail`` in the body. ``place_credentials`` puts them where the table
says, ``SECRET_KEYS`` (the fields ``redact_url`` hides) is derived from it, and so are
the environment variables. A new credential placement is one new ``Placement`` row.

Secrets stay out of sight in three ways:

* On the request path a credential is a ``SecretValue`` (repr and str ``REDACTED``) and
  becomes text only where the request is encoded (``reveal``), so a traceback rendered
  with its local variables (Sentry, rich, loguru) shows no credential.
* ``Credentials.scrub`` replaces a credential in any text, in every form it can come
  back in: raw, percent-encoded (either case, twice, ``+`` for a space), form-encoded,
  JSON-escaped (``\\u00f6``, ``\\/``), Python-escaped (``\\xf6``, ``\\+``) and HTML
  character references, as a whole token only (see ``_pattern``). Scrubbed: the key,
  the user name, the key in base64 (standard and URL-safe, padded or not) and a base
  URL's password with its ``Authorization: Basic`` value (``Credentials.with_urls``).
  Not recognised (no service is known to echo them): HTML *named* entities, Unicode
  normalisation (NFD), case changes, quoted-printable, mojibake.
* ``Credentials.clean`` is applied to every ``SDKError`` leaving the transport
  (``_wire.clean_errors``): its texts are scrubbed once more and the local variables of
  the library's frames it passed through are cleared (the frames themselves stay, so
  the traceback still shows where it came from); an exception re-raised as it is (a
  cancellation from outside) gets the second half (``_wire.forget_frames``).
"""

from __future__ import annotations

import base64
import enum
import functools
import math
import re
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final
from urllib.parse import quote_plus, unquote, urlencode, urlsplit

import attrs

from .. import _constants as C
from .._errors import ConfigurationError

__all__ = [
    "REDACTED",
    "SECRET_KEYS",
    "Area",
    "Credentials",
    "Part",
    "Placement",
    "Secret",
    "SecretValue",
    "encode_query",
    "place_credentials",
    "redact_url",
    "reveal",
    "scrub",
]

#: What a credential is replaced with wherever it would be shown.
REDACTED: Final = "REDACTED"


class Secret(enum.Enum):
    """A credential of the account: its ``Client`` argument and environment variable."""

    API_KEY = ("api_key", C.ENV_API_KEY)
    USERNAME = ("username", C.ENV_USERNAME)

    def __init__(self, argument: str, env_var: str) -> None:
        #: The ``Client`` argument that sets it.
        self.argument = argument
        #: The environment variable read when the argument is left unset.
        self.env_var = env_var


class Part(enum.Enum):
    """The part of a request that carries the credentials."""

    QUERY = "query"
    FORM = "form"


@attrs.frozen
class Placement:
    """Where an area's requests carry the credentials: ``part``, and per field name the
    credential it holds."""

    part: Part
    fields: tuple[tuple[str, Secret], ...]
    #: ``part is Part.FORM``, precomputed: read on every request.
    in_form: bool = attrs.field(init=False, repr=False)

    @in_form.default
    def _in_form(self) -> bool:
        return self.part is Part.FORM


KEY_IN_QUERY = Placement(Part.QUERY, (("api_key", Secret.API_KEY),))
KEY_AND_USER_IN_QUERY = Placement(
    Part.QUERY, (("api", Secret.API_KEY), ("username", Secret.USERNAME)))
KEY_AND_USER_IN_FORM = Placement(
    Part.FORM, (("api", Secret.API_KEY), ("username", Secret.USERNAME)))


class Area(enum.Enum):
    """A part of the interface: its URL argument, credential placement, and whether it
    says ``status: fail`` in the body (validation, mail) rather than by HTTP status."""

    #            URL argument       credentials             fail in the body
    CONTACTS = ("contacts_url", KEY_IN_QUERY, False)
    CRM = ("crm_url", KEY_IN_QUERY, False)
    INVOICING = ("invoicing_url", KEY_IN_QUERY, False)
    VALIDATION = ("validation_url", KEY_AND_USER_IN_QUERY, True)
    MAIL = ("mail_url", KEY_AND_USER_IN_FORM, True)

    # Plain attributes, not properties: the request path reads them on every call.
    def __init__(self, argument: str, placement: Placement, answers_in_body: bool) -> None:
        #: The ``Client`` argument that sets this area's URL.
        self.argument = argument
        #: The environment variable that sets it (``ASYNCSDK_<ARGUMENT>``).
        self.env_var = C.ENV_PREFIX + argument.upper()
        #: Where this area's requests carry the credentials.
        self.placement = placement
        #: Validation and mail say fail in the body (``status: fail``), not by HTTP.
        self.answers_in_body = answers_in_body


#: Query and form field names that hold a credential (derived from the table).
SECRET_KEYS: Final = frozenset(name for area in Area for name, _ in area.placement.fields)
_SECRET_KEYS = tuple(SECRET_KEYS)


class SecretValue:
    """A credential on its way to the wire: ``repr`` and ``str`` say ``REDACTED``;
    ``reveal()`` gives the text, which only the request encoding should call."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The credential itself."""
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretValue) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def reveal(fields: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``fields`` with each ``SecretValue`` turned into its text: call it only inline
    where the request is handed to aiohttp, so that no local variable holds the result."""
    if fields is None:
        return None
    out = dict(fields)
    for key in _SECRET_KEYS:
        value = out.get(key)
        if value.__class__ is SecretValue:
            out[key] = value._value
    return out


try:  # yarl's own query quoter: the bytes aiohttp itself would send
    from yarl._quoting import _Quoter

    _quote_part: Callable[[str], str] = _Quoter(safe="?/:@", qs=True, requote=False)
except ImportError:  # pragma: no cover - another yarl layout: an equivalent encoding
    _quote_part = functools.partial(quote_plus, safe="?/:@")


#: A query key -> its encoded form with ``=`` (``encode_query``): the keys of the
#: library's requests are a few fixed names, encoded once.
_KEY_PARTS: dict[str, str] = {}
#: (key, int value) -> ``key=value`` (``encode_query``): a bool never reaches it.
_INT_PAIRS: dict[tuple[str, int], str] = {}


#: ``text`` encoded as a query value, exactly as ``encode_query`` (and aiohttp) encodes
#: it: for a hot path that knows its query's shape (``validation.check``).
quote_value: Callable[[str], str] = _quote_part


def encode_query(fields: Mapping[str, Any] | None) -> str | None:
    """``fields`` as an encoded query (``a=1&b=x%40y``), as aiohttp would encode them;
    None where a value is not a plain str, int or finite float (aiohttp then encodes
    ``fields`` itself and raises what it raises). Never pass credentials as text here:
    they go through ``Credentials.query_part``."""
    if not fields:
        return ""
    pairs = []
    for key, value in fields.items():
        kind = value.__class__
        if kind is str:
            text = _quote_part(value)
        elif kind is int:
            # The same few numbers on every call (``timeout=30``): each pair built once.
            pair = _INT_PAIRS.get((key, value))
            if pair is None:
                pair = _pair(key, str(value))  # digits and "-" only: nothing to encode
                if len(_INT_PAIRS) < 256:
                    _INT_PAIRS[key, value] = pair
            pairs.append(pair)
            continue
        elif kind is float and math.isfinite(value):
            text = _quote_part(str(value))  # the "+" of "1e+20" is encoded
        else:
            return None
        head = _KEY_PARTS.get(key)
        pairs.append(_pair(key, text) if head is None else head + text)
    return "&".join(pairs)


def _pair(key: str, text: str) -> str:
    """``key=text``, the key encoded (and kept in ``_KEY_PARTS``)."""
    head = _KEY_PARTS.get(key)
    if head is None:
        head = _quote_part(key) + "="
        if len(_KEY_PARTS) < 256:
            _KEY_PARTS[key] = head
    return head + text


# --- scrubbing -------------------------------------------------------------------------
def _hex(value: int, width: int) -> str:
    """Hex digits of ``value`` as a regex matching either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{width}x}")


#: Escapes with a short form in JSON, Python and HTML text.
_SHORT_ESCAPES: dict[str, tuple[str, ...]] = {
    '"': ('\\"', "&quot;"), "\\": ("\\\\",), "/": ("\\/",), "'": ("\\'", "&#39;", "&apos;"),
    "&": ("&amp;",), "<": ("&lt;",), ">": ("&gt;",),
}


def _char_pattern(char: str) -> str:
    """A regex for one character of a credential in any of the encodings scrubbed."""
    code = ord(char)
    utf8 = char.encode("utf-8", "surrogatepass")
    forms = [
        re.escape(char),
        "".join("%" + _hex(b, 2) for b in utf8),  # percent-encoded
        "".join("%25" + _hex(b, 2) for b in utf8),  # percent-encoded twice
        "".join(r"\\x" + _hex(b, 2) for b in utf8),  # repr of the UTF-8 bytes
        f"&#0*{code};",
        f"&#[xX]0*{_hex(code, 1)};",
        *(re.escape(e) for e in _SHORT_ESCAPES.get(char, ())),
    ]
    if code < 0x80 and not char.isalnum():  # escaped with a backslash (``\\+``, ``\\=``)
        forms.append(re.escape("\\" + char))
    if code < 0x100:
        forms.append(r"\\x" + _hex(code, 2))
    if code < 0x10000:
        forms.append(r"\\u" + _hex(code, 4))
    else:  # JSON writes a surrogate pair, Python \U
        high, low = divmod(code - 0x10000, 0x400)
        forms.append(r"\\u" + _hex(0xD800 + high, 4) + r"\\u" + _hex(0xDC00 + low, 4))
        forms.append(r"\\U" + _hex(code, 8))
    if char == " ":
        forms.append(r"\+")  # form encoding
    elif char == "+":
        forms.append(" ")  # a raw plus read back as a space by the server
    return "(?:" + "|".join(dict.fromkeys(forms)) + ")"


#: A match must not continue a word: not preceded by a word character (unless that
#: character ends an escape such as ``%20`` or ``\n``) nor followed by one.
_ESCAPE_BEFORE = (r"(?<=%[0-9A-Fa-f]{2})|(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4})"
                  r"|(?<=\\x[0-9A-Fa-f]{2})")
_BEFORE = r"(?:(?<!\w)|" + _ESCAPE_BEFORE + ")"
_AFTER = r"(?!\w)"
#: For a credential of up to ``_JOINED_MAX`` characters an apostrophe or hyphen between
#: two word characters joins a word too: "t" of "can't", "s" of "user's", "o" of
#: "o-ring" stay (redacting would garble); ``{'username': 'o'}`` is still redacted. A
#: longer one is redacted there all the same ("jsmith's": a leak costs more).
_BEFORE_JOINED = r"(?:(?<!\w)(?:(?<!\w['\-])|(?!\w))|" + _ESCAPE_BEFORE + ")"
_AFTER_JOINED = r"(?!\w)(?:(?<!\w)|(?!['\-]\w))"
_JOINED_MAX = 3


@functools.lru_cache(maxsize=32)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    """Every form of every one of ``secrets`` as a whole token, longest first (one that
    contains another is replaced whole); a short one by the joined-word rule."""
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)
    groups = [before + "(?:" + "|".join(alternatives) + ")" + after
              for before, after, alternatives in (
                  (_BEFORE, _AFTER, [_forms(s) for s in ordered if len(s) > _JOINED_MAX]),
                  (_BEFORE_JOINED, _AFTER_JOINED,
                   [_forms(s) for s in ordered if len(s) <= _JOINED_MAX]))
              if alternatives]
    return re.compile("|".join(groups)) if groups else None


def _forms(secret: str) -> str:
    return "".join(_char_pattern(c) for c in secret)


def _margin(secrets: tuple[str, ...]) -> int:
    """Characters the longest encoded form of a credential may take."""
    return 20 * max((len(s) for s in secrets), default=0)


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with each of ``secrets``, in any encoding, replaced by ``REDACTED`` where
    it stands as a whole token (a value, a word), never inside a longer word."""
    pattern = _pattern(tuple(s for s in secrets if s))
    return text if pattern is None else pattern.sub(REDACTED, text)


# --- the credentials --------------------------------------------------------------------
@attrs.frozen(slots=True)
class Credentials:
    """The secrets of the account. Never shown in a repr.

    ``url_logins``: ``(user, password)`` of each base URL with a password
    (``with_urls``), which aiohttp sends as ``Authorization: Basic`` (a service may echo
    it): the password and that header's value are scrubbed too."""

    api_key: str | None = attrs.field(repr=False)
    username: str | None = attrs.field(repr=False)
    url_logins: tuple[tuple[str, str], ...] = attrs.field(default=(), repr=False,
                                                          kw_only=True)
    #: Each configured credential by its argument name, wrapped once (the request path
    #: reuses them).
    values: Mapping[str, SecretValue] = attrs.field(init=False, repr=False, eq=False)
    #: ``query_part`` per area (by its ``argument``: a str hashes faster than an Enum).
    _query_parts: dict[str, SecretValue] = attrs.field(
        init=False, repr=False, eq=False, factory=dict)
    #: Every text ``scrub`` replaces, worked out once: the key and user name, the key in
    #: base64 (a service may quote a token it decoded), each base-URL password (as in
    #: the URL and decoded) and its login's ``Authorization: Basic`` value.
    _secrets: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False)

    @values.default
    def _wrap(self) -> Mapping[str, SecretValue]:
        return {s.argument: SecretValue(v) for s in Secret if (v := self.get(s))}

    @_secrets.default
    def _texts_to_scrub(self) -> tuple[str, ...]:
        texts = [s for s in (self.api_key, self.username) if s]
        texts += _base64_forms(self.api_key.encode()) if self.api_key else []
        for user, password in self.url_logins:
            login = f"{unquote(user)}:{unquote(password)}"
            texts += [password, unquote(password)]
            for codec in ("latin-1", "utf-8"):  # aiohttp's ``BasicAuth``: latin-1
                texts += _base64_forms(login.encode(codec, "replace"))
        return tuple(dict.fromkeys(t for t in texts if t))

    def with_urls(self, urls: Iterable[str | None]) -> Credentials:
        """These credentials, also scrubbing the password of each of ``urls`` that has a
        ``user:password@`` part (``url_logins``); ``self`` when none has one."""
        logins = [*self.url_logins]
        for url in urls:
            try:
                parts = urlsplit(url) if url and "@" in url else None
                if parts is not None and parts.password:
                    logins.append((parts.username or "", parts.password))
            except ValueError:  # not a URL: it cannot be sent either
                continue
        if len(logins) == len(self.url_logins):
            return self
        return attrs.evolve(self, url_logins=tuple(dict.fromkeys(logins)))

    def get(self, secret: Secret) -> str | None:
        """The value of ``secret`` (None when not configured)."""
        return self.api_key if secret is Secret.API_KEY else self.username

    def need(self, secret: Secret, operation: str) -> SecretValue:
        """``secret`` for ``operation``, wrapped; ``ConfigurationError`` naming the
        argument and the variable when it is not configured."""
        value = self.get(secret)
        if not value:
            raise ConfigurationError(
                f"{operation}: no {secret.argument}: pass {secret.argument}= to Client or "
                f"set {secret.env_var}",
                field=secret.argument,
            )
        return SecretValue(value)

    def query_part(self, area: Area, operation: str) -> SecretValue:
        """The encoded query part carrying ``area``'s credentials (``api=..&username=..``,
        empty where the area carries them in a form), built once per area and kept as a
        ``SecretValue``: reveal it only inline where the request is handed to aiohttp.

        Raises:
            ConfigurationError: a credential the area needs is not configured.
        """
        part = self._query_parts.get(area.argument)
        if part is None:
            placement = area.placement
            fields = () if placement.in_form else placement.fields
            part = SecretValue("&".join(
                f"{_quote_part(name)}={_quote_part(self.need(secret, operation).reveal())}"
                for name, secret in fields))
            self._query_parts[area.argument] = part
        return part

    def scrub(self, text: str) -> str:
        """``text`` with every credential, in any encoding, replaced by ``REDACTED``
        where it stands as a whole token (see ``scrub``)."""
        return scrub(text, self._secrets)

    def preview(self, raw: bytes | str, limit: int) -> str:
        """At most ``limit`` characters of ``raw`` (bytes read as UTF-8), scrubbed.

        Cut *after* scrubbing and never inside a credential, so that a credential
        straddling the cut is not shown in part."""
        secrets = self._secrets
        head = raw[: limit + _margin(secrets)]
        text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
        pattern = _pattern(secrets)
        if pattern is None:
            return text[:limit]
        cut = limit
        for match in pattern.finditer(text):
            if match.start() >= limit:
                break
            cut = max(cut, match.end())
        return pattern.sub(REDACTED, text[:cut])

    def clean(self, exc: BaseException) -> None:
        """Scrub the texts of ``exc`` (message, args, ``error_text``, ``body``, ``url``,
        ``request_id``) and clear the local variables of the frames it has passed
        through (which may hold bodies and URLs): the safety net at the transport's
        edge."""
        exc.args = tuple(self.scrub(a) if isinstance(a, str) else a for a in exc.args)
        for name in ("message", "error_text", "body", "url", "request_id"):
            value = getattr(exc, name, None)
            if isinstance(value, str):
                setattr(exc, name, self.scrub(value))
        traceback.clear_frames(exc.__traceback__)  # frames still running are skipped


def _base64_forms(raw: bytes) -> list[str]:
    """``raw`` in base64, standard and URL-safe, with and without ``=`` padding."""
    forms = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return [*forms, *(f.rstrip("=") for f in forms)]


def place_credentials(
    area: Area,
    credentials: Credentials,
    operation: str,
    params: Mapping[str, Any] | None,
    form: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(query, form)`` of a request of ``area`` with the credentials put where the
    table says, as ``SecretValue``s (pass both through ``reveal`` to aiohttp).

    Raises:
        ConfigurationError: a credential the area needs is not configured.
    """
    placement = area.placement
    query = dict(params) if params else {}
    body = dict(form) if form is not None else None
    if placement.in_form:
        if body is None:
            body = {}
        target = body
    else:
        target = query
    values = credentials.values
    for name, secret in placement.fields:
        value = values.get(secret.argument)
        target[name] = value if value is not None else credentials.need(secret, operation)
    return query, body


def redact_url(url: str, params: Mapping[str, Any] | None = None) -> str:
    """The URL (plus ``params``) as it may be shown: the value of every credential field
    and the password of a ``user:password@`` part replaced by ``REDACTED``."""
    if "@" in url:
        url = _redact_userinfo(url)
    if not params:
        return url
    shown = {k: (REDACTED if k in SECRET_KEYS else v) for k, v in params.items()}
    return f"{url}?{urlencode(shown)}"


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*):[^/?#]*@")


def _redact_userinfo(url: str) -> str:
    return _USERINFO.sub(rf"\1:{REDACTED}@", url, count=1)
