"""Credentials: where they go in a request, and how they are kept out of every text.

Where a request carries the credentials is a ``Placement`` (which part of the request,
which field name holds which ``Secret``); the areas of the interface each name theirs
(``resources._areas``). ``CREDENTIAL_FIELDS`` (public: the query and form field names
that hold a credential, the names ``redact_url`` hides) is derived from the placements.
The credentials are added to a request last, by the library's own aiohttp middleware
(``_core.middleware``): every URL and body built before carries none.

Secrets stay out of sight in three ways:

* On the request path a credential is a ``SecretValue`` (repr and str ``REDACTED``) and
  becomes text only inline where the middleware adds it, so a traceback rendered with
  its local variables (Sentry, rich, loguru) shows no credential.
* ``Credentials.scrub`` replaces a credential in any text, in every form it can come
  back in: raw, percent-encoded (either case, twice, ``+`` for a space), form-encoded,
  JSON-escaped (``\\u00f6``, ``\\/``), Python-escaped (``\\xf6``, ``\\+``) and HTML
  character references, as a whole token only (see ``_pattern``). Scrubbed: the key,
  the user name, the key in base64 (standard and URL-safe, padded or not) and a base
  URL's password with its ``Authorization: Basic`` value (``Credentials.with_urls``).
  Not recognised (no service is known to echo them): HTML *named* entities, Unicode
  normalisation (NFD), case changes, quoted-printable, mojibake.
* ``Credentials.clean`` is applied to every ``SDKError`` leaving the transport
  (at ``Transport._send_handling_retries``): the texts of one of the library's own
  classes are scrubbed once more (a caller's subclass is theirs: left as it was made),
  and the local variables of the library's own frames it passed through are cleared
  (the frames themselves stay, so the traceback still shows where it came from).

Frames are cleared by ``frames.clear_frames``: the library's own and, where the
middleware added credentials, aiohttp's below it, in the part of a traceback that is the
library's call. A frame of anyone else (a caller's trace hook, connector or middleware,
and what the caller's code called from there), a traceback and a chain of exceptions
are never cut or cleared: a guest leaves the caller's debugging material as it found it.

A redirect's target may echo the query it was sent (nginx's ``$request_uri``):
``without_credential_fields`` takes the credential fields out of such a URL, so that
nothing sees them and the middleware adds them back only to the call's own origin.
"""

from __future__ import annotations

import base64
import enum
import functools
import itertools
import re
import unicodedata
import weakref
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import unquote, unquote_plus, urlencode, urlsplit

import attrs
from yarl import URL

from .. import _constants as C
from .._errors import ConfigurationError
from .frames import LIBRARY_FOLDER, clear_frames

__all__ = [
    "CREDENTIAL_FIELDS",
    "KEY_AND_USER_IN_FORM",
    "KEY_AND_USER_IN_QUERY",
    "KEY_IN_QUERY",
    "PLACEMENTS",
    "REDACTED",
    "Credentials",
    "Echoes",
    "Part",
    "Placement",
    "Secret",
    "SecretValue",
    "is_library_class",
    "may_name_a_credential",
    "query_without_credential_fields",
    "redact_secrets",
    "redact_url",
    "scrub",
    "without_credential_fields",
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


KEY_IN_QUERY: Final[Placement] = Placement(Part.QUERY, (("api_key", Secret.API_KEY),))
KEY_AND_USER_IN_QUERY: Final[Placement] = Placement(
    Part.QUERY, (("api", Secret.API_KEY), ("username", Secret.USERNAME)))
KEY_AND_USER_IN_FORM: Final[Placement] = Placement(
    Part.FORM, (("api", Secret.API_KEY), ("username", Secret.USERNAME)))


#: Every placement the interface uses (``resources._areas`` picks one per area).
PLACEMENTS: Final = (KEY_IN_QUERY, KEY_AND_USER_IN_QUERY, KEY_AND_USER_IN_FORM)
#: The query and form field names that hold a credential in some request of the
#: interface (``api_key``, ``api``, ``username``), derived from the placements. Public
#: (``asyncsdk.CREDENTIAL_FIELDS``): for the filters of recorders, trackers and logs.
CREDENTIAL_FIELDS: Final[frozenset[str]] = frozenset(
    name for placement in PLACEMENTS for name, _ in placement.fields)
#: ``CREDENTIAL_FIELDS`` casefolded (``redact_url`` hides ``API_KEY=`` too).
_FOLDED_FIELDS: Final = frozenset(name.casefold() for name in CREDENTIAL_FIELDS)


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


@functools.lru_cache(maxsize=32)
def _longest_run(secret: str) -> str:
    """The longest run of letters and digits of ``secret`` ("" when it has none: then
    any text may hold it)."""
    return max(re.split(r"[^\w]|_", secret), key=len, default="")


class Echoes:
    """The credentials one call's answers must not echo, wrapped, with a quick test made
    once (``may_be_in``): a pattern of each secret's longest run (kept out of any repr),
    so that an answer's headers are tested by C searches alone."""

    __slots__ = ("_anywhere", "_runs", "_secrets")

    def __init__(self, secrets: Iterable[SecretValue]) -> None:
        self._secrets = tuple(secrets)
        runs = {_longest_run(secret.reveal()) for secret in self._secrets}
        # A secret without a run of letters or digits may be in any text.
        self._anywhere = "" in runs
        self._runs = (re.compile("|".join(map(re.escape, sorted(runs))))
                      if runs and not self._anywhere else None)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __repr__(self) -> str:
        return REDACTED

    def may_be_in(self, text: str) -> bool:
        """False when ``text`` surely holds none of the secrets in any form ``scrub``
        replaces. Sound because every form that writes a letter or digit otherwise than
        as itself carries ``%``, ``\\`` or ``&`` (percent-, JSON-, Python-escaped, HTML
        references): without those, a form of a secret shows its longest run of letters
        and digits as it is."""
        if "%" in text or "\\" in text or "&" in text:
            return True
        runs = self._runs
        return self._anywhere or (runs is not None and runs.search(text) is not None)

    def scrubbed(self, text: str) -> str:
        """``scrub(text, secrets)``."""
        return scrub(text, [secret.reveal() for secret in self._secrets])


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
    #: Every text ``scrub`` replaces, worked out once: the key and user name, the key in
    #: base64 (a service may quote a token it decoded), each base-URL password (as in
    #: the URL and decoded) and its login's ``Authorization: Basic`` value.
    _secrets: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        # For ``redact_secrets``: held weakly, by a number of its own (equal credentials
        # of two clients are two entries: one dropped must not drop the other's).
        _IN_USE[next(_NUMBERS)] = self

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

    def texts_to_scrub(self) -> tuple[str, ...]:
        """Every text ``scrub`` replaces (see ``hidden``), unwrapped."""
        return self._secrets

    def hidden(self) -> tuple[SecretValue, ...]:
        """Every text ``scrub`` replaces (the key, the user name, the key in base64, each
        base URL's password and login header), each wrapped."""
        return tuple(map(SecretValue, self._secrets))

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

    def fields(self, placement: Placement, operation: str) -> tuple[tuple[str, SecretValue], ...]:
        """The ``(field name, credential)`` pairs ``placement`` puts in a request, each
        wrapped (reveal it only inline where the request is completed).

        Raises:
            ConfigurationError: a credential the placement needs is not configured.
        """
        values = self.values
        return tuple((name, values.get(secret.argument) or self.need(secret, operation))
                     for name, secret in placement.fields)

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
        ``request_id``) and clear the local variables of the library's frames it has
        passed through (which may hold bodies and URLs): the safety net at the
        transport's edge. The texts only of an exception of the library's own classes:
        one of the caller's (an ``SDKError`` subclass raised by a trace hook) is the
        caller's, left as it was made (a read-only ``url`` of theirs stays readable)."""
        if is_library_class(type(exc)):
            exc.args = tuple(self.scrub(a) if isinstance(a, str) else a for a in exc.args)
            for name in ("message", "error_text", "body", "url", "request_id"):
                value = getattr(exc, name, None)
                if isinstance(value, str):
                    setattr(exc, name, self.scrub(value))
        clear_frames(exc, (LIBRARY_FOLDER,))  # the library's own frames, no other


#: The credentials of every client alive in the process (held weakly): what
#: ``redact_secrets`` replaces, so that a recorder's filter needs no key of its own.
_IN_USE: Final[weakref.WeakValueDictionary[int, Credentials]] = weakref.WeakValueDictionary()
_NUMBERS: Final = itertools.count()


def redact_secrets(text: str) -> str:
    """``text`` with the credentials of every ``asyncsdk.Client`` alive in this process
    replaced by ``REDACTED``: the API key (also in base64), the user name and a base
    URL's password, in any encoding a service may echo them in (percent-, form-, JSON-,
    Python- or HTML-escaped), wherever each stands as a whole token. Everything else is
    kept as it is.

    For what the library's errors, logs and answers' headers cannot cover: a body a
    service echoes a credential in (``asyncsdk.testing.vcr_config()`` records answers
    through it), or a text of your own.

    >>> client = asyncsdk.Client(api_key="s3cret-key", username="me")
    >>> asyncsdk.redact_secrets("unknown key: s3cret-key")
    'unknown key: REDACTED'
    """
    secrets = sorted({s for credentials in list(_IN_USE.values())
                      for s in credentials.texts_to_scrub()})
    return scrub(text, secrets) if secrets else text


def _base64_forms(raw: bytes) -> list[str]:
    """``raw`` in base64, standard and URL-safe, with and without ``=`` padding."""
    forms = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return [*forms, *(f.rstrip("=") for f in forms)]


def redact_url(url: str | URL, params: Mapping[str, Any] | None = None) -> str:
    """``url`` as it may be shown: the value of every credential field of its query
    (``CREDENTIAL_FIELDS``, in any letter case) and the password of a
    ``user:password@`` part replaced by ``REDACTED``; everything else is kept as it is,
    byte for byte (the order of the query, its encoding, the fragment).

    Works on a full URL, as text or ``yarl.URL`` (what OpenTelemetry's ``url_filter``
    is given: pass ``asyncsdk.redact_url`` as it is). ``params``: a query to append,
    its credential fields redacted the same way. A credential anywhere else (a path, a
    field of another name) is not recognised here: ``redact_url`` knows the field
    names, not the values (``Credentials.scrub`` does that). A field is told by its name
    as a server may read it: ``&`` or ``;`` between fields, the name percent-decoded
    (twice over too), spaces and control characters around it ignored, compatibility
    forms (``\uff21PI``) folded; a scheme-relative ``//user:password@`` is redacted too.

    >>> redact_url("https://api.example.com/v1/check?email=a%40b.com&api=s3cret&username=me")
    'https://api.example.com/v1/check?email=a%40b.com&api=REDACTED&username=REDACTED'
    """
    text = str(url)
    if "@" in text:
        text = _redact_userinfo(text)
    if "?" in text:
        text = _redact_query(text)
    if not params:
        return text
    shown = {k: (REDACTED if _names_a_credential(str(k)) else v) for k, v in params.items()}
    return f"{text}{'&' if '?' in text else '?'}{urlencode(shown)}"


#: The lower-case credential field names none of which holds another ("api" stands for
#: "api_key" too): a query that holds none of them, in any letter case, names none.
_LOWER_NAMES = frozenset(name.lower() for name in CREDENTIAL_FIELDS)
_NAME_PARTS = tuple(sorted(name for name in _LOWER_NAMES
                           if not any(other != name and other in name for other in _LOWER_NAMES)))


def may_name_a_credential(raw_query: str) -> bool:
    """False when surely no field of ``raw_query`` is named as a credential: it is all
    ASCII, has no ``%`` or ``+`` (a name ``query_without_credential_fields`` would have
    to decode first) and holds no credential field name anywhere, in any letter case.
    True (a value that merely contains "api" too): ``query_without_credential_fields``
    is to look closer. The quick test of every request the middleware completes: only C
    string operations (a regular expression took about ten times as many instructions)."""
    lowered = raw_query.lower()
    return (not raw_query.isascii() or "%" in raw_query or "+" in raw_query
            or any(map(lowered.__contains__, _NAME_PARTS)))


def query_without_credential_fields(query: str) -> str | None:
    """``query`` (a raw query string) without its credential fields
    (``CREDENTIAL_FIELDS``, any letter case, however percent-encoded), the other fields
    kept byte for byte and in order; None when it has none (nothing is built)."""
    pairs = query.split("&")
    if not any(map(_credential_field, pairs)):  # nearly every request
        return None
    return "&".join(pair for pair in pairs if not _credential_field(pair))


def _credential_field(pair: str) -> bool:
    """True when the query field ``pair`` (``name=value``) is named as a credential."""
    return _names_a_credential(pair.partition("=")[0])


def _names_a_credential(name: str) -> bool:
    """True when the raw field name ``name`` reads as a credential field's to a server:
    percent-decoded (a name encoded twice decodes twice), with spaces and control
    characters around it dropped and compatibility forms folded (NFKC)."""
    for _ in range(3):  # "%2561pi" -> "%61pi" -> "api"
        if "%" not in name and "+" not in name:
            break
        name = unquote_plus(name)
    name = name.strip("".join(map(chr, range(33))))
    if not name.isascii():
        name = unicodedata.normalize("NFKC", name)
    return name.casefold() in _FOLDED_FIELDS


def without_credential_fields(url: str) -> str | None:
    """``url`` (a whole URL or a reference, as a ``Location`` header holds it) without
    the credential fields of its query (``query_without_credential_fields``),
    everything else kept as it is; None when it has none."""
    head, hashmark, fragment = url.partition("#")
    path, question, query = head.partition("?")
    kept = query_without_credential_fields(query) if question else None
    if kept is None:
        return None
    return f"{path}{'?' if kept else ''}{kept}{hashmark}{fragment}"


_USERINFO = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/?#@:]*):[^/?#]*@")
#: What separates the fields of a query: ``&``, and ``;`` for servers that read it so.
_FIELD_SEPARATORS = re.compile(r"([&;])")


def _redact_userinfo(url: str) -> str:
    return _USERINFO.sub(rf"\1:{REDACTED}@", url, count=1)


def _redact_query(url: str) -> str:
    """``url`` with the value of each credential field of its query redacted."""
    head, hashmark, fragment = url.partition("#")
    path, _, query = head.partition("?")
    parts = _FIELD_SEPARATORS.split(query)  # fields at even places, separators between
    for i in range(0, len(parts), 2):
        name, equals, _value = parts[i].partition("=")
        if equals and _names_a_credential(name):
            parts[i] = f"{name}={REDACTED}"
    return f"{path}?{''.join(parts)}{hashmark}{fragment}"


#: The library's top-level package (``asyncsdk``): its classes are its own to rewrite.
_PACKAGE: Final = __name__.partition(".")[0]


def is_library_class(cls: type) -> bool:
    """True when ``cls`` is one of the library's own (defined in its package), not a
    subclass the caller made of one."""
    return cls.__module__.partition(".")[0] == _PACKAGE


