"""Argument checks and ``Annotated`` markers: every rule a caller's value must meet before
anything is sent, each in exactly one function here.

Two layers:

* **Value checks** (``text_value``, ``int_value``, ``email_value``, ...) take the value
  alone and raise ``Refused(allowed)``; the models' input checks
  (``models._input_checks``) choose them by annotation, so model fields are checked.
* **Argument checks** (``check_email(value, field)``, ``check_seconds``, ``check_count``,
  ``check_id``, ``check_job_id``, ``check_http_url``, ...) are what a method calls for
  its plain arguments: the same rule, raising ``InvalidInputError`` naming the field and
  what is allowed.

Decisions:

* **Email addresses** sent to be judged (``validation.check``, ``check_many``, mail
  ``sender``/``to``) are refused only when they cannot be an address at all: no ``@``,
  control characters, white space outside a quoted part, or over 254 characters (the
  rule of issue 13, applied literally: even ``a@`` is sent, and the service answers).
  Quoted local parts (``"a b"@example.com``), address literals (``me@[IPv6:::1]``) and
  dotless domains (``test@io``) pass: judging addresses is the service's job. A mail's
  ``sender`` and ``to`` must also name one address (``check_one_address``): a list such
  as ``a@x.com,b@y.com`` is refused rather than left for the service to split.
  Lead and customer emails (the ``Email`` marker) are checked more strictly, since the
  interface says they must be valid: a dot-free local part of printable characters, one
  ``@``, and a dotted domain.
* **Ids** are ints from 0 to 2**63-1, or (resource ids) a short text path segment; job
  ids are such ints or their ASCII digits. Huge numbers, other scripts' digits (``"²"``)
  and texts of thousands of digits are refused, never a bare ``ValueError``.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Annotated, Any, Final
from urllib.parse import urlsplit

from ._errors import InvalidInputError

__all__ = [
    "MAX_ID",
    "MONEY_CONTEXT",
    "CountryCode",
    "Email",
    "Marker",
    "OneOf",
    "RecordId",
    "Refused",
    "SingleLine",
    "check_bool",
    "check_count",
    "check_email",
    "check_file_path",
    "check_http_url",
    "check_id",
    "check_job_id",
    "check_number",
    "check_one_address",
    "check_seconds",
    "check_single_line",
    "check_text",
    "check_tls",
    "checked",
    "in_cents",
    "is_http_url",
    "refuse",
]

#: The largest id accepted (a signed 64-bit integer, as databases hold them).
MAX_ID: Final = 2**63 - 1
#: Longest text id accepted as a path segment.
MAX_TEXT_ID: Final = 64

#: Control characters: C0, DEL and C1 (Unicode category Cc).
CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: What ends a line or controls a terminal: the control characters and U+2028/U+2029.
_LINE_BREAKING_RE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: The range of a JSON integer the service stores (a signed 64-bit integer).
MIN_INT: Final = -(2**63)
_CENT = Decimal("0.01")
#: The decimal context of amounts, fixed: the caller's own (its precision, its traps,
#: set by ``decimal.localcontext`` or ``getcontext``) changes neither what is accepted
#: nor what is sent. 28 digits: at most 26 before the point, two after.
MONEY_CONTEXT: Final = Context(prec=28, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation])
_COUNTRY_CODES = frozenset({1, *range(26, 248)})


class Refused(ValueError):
    """A value check said no: ``allowed`` says what would do; ``path`` is where inside
    the value (``[2]`` for the third item of a list), filled in on the way out."""

    def __init__(self, allowed: str, value: Any, path: str = "") -> None:
        super().__init__(allowed)
        self.allowed = allowed
        self.value = value
        self.path = path


def _shown(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return type(value).__name__
    if isinstance(value, enum.Enum):
        # An open enum's unknown code (read by from_dict) is a member named by its
        # value: show the value a caller wrote, not <Industry.999: 999>.
        if value.name == str(value.value):
            return _shown(value.value)
        return f"{type(value).__name__}.{value.name} ({_shown(value.value)})"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**40:
        return f"an int of {len(str(abs(value))) if value.bit_length() < 10_000 else 'many'} digits"
    if isinstance(value, str) and len(value) > 60:
        value = value[:57] + "..."
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def refuse(field: str, allowed: str, value: Any) -> InvalidInputError:
    """The ``InvalidInputError`` for ``value`` of ``field``, saying what is allowed."""
    return InvalidInputError(f"{field}: expected {allowed}, got {_shown(value)}", field=field)


def checked(check: Callable[[Any], Any], value: Any, field: str) -> Any:
    """``check(value)``, with a ``Refused`` turned into ``InvalidInputError`` for ``field``."""
    try:
        return check(value)
    except Refused as no:
        where = field + no.path
        raise refuse(where, no.allowed, no.value) from None


# --- Value checks (value -> value, or Refused) -----------------------------------------
def text_value(value: Any) -> str:
    """A string without NUL characters that UTF-8 can encode (no lone surrogate such as
    ``"\\ud800"``: it would be dropped from a URL or make the body invalid)."""
    if not isinstance(value, str):
        raise Refused("a string", value)
    if "\x00" in value:
        raise Refused("text without NUL characters", value)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Refused("text that UTF-8 can encode (no lone surrogates)", value) from None
    return value


def single_line_value(value: Any) -> str:
    """Text that ends up in a form field or header: no CR, LF, other control character
    (C0, DEL, C1) or Unicode line separator."""
    text = text_value(value)
    if _LINE_BREAKING_RE.search(text):
        raise Refused("a single line without control characters (no CR/LF)", value)
    return text


_SPACE_RE = re.compile(r"\s")  # what str.isspace() says is white space


def _unquoted(text: str) -> str:
    """``text`` without its quoted parts (``"..."`` with ``\\`` escapes)."""
    if '"' not in text:
        return text
    kept: list[str] = []
    quoted = escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif quoted and ch == "\\":
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif not quoted:
            kept.append(ch)
    return "".join(kept)


def _outside_quotes_has_space(text: str) -> bool:
    """True if white space occurs outside a quoted part (``"..."`` with ``\\`` escapes)."""
    return _SPACE_RE.search(_unquoted(text)) is not None


def email_value(value: Any) -> str:
    """Something that can be an address: an ``@``, no control characters, no white space
    outside quotes, at most 254 characters (the rest, ``a@`` included, is the service's
    to judge)."""
    text = text_value(value)
    if (len(text) > 254 or "@" not in text or CONTROL_RE.search(text)
            or _outside_quotes_has_space(text)):
        raise Refused("an email address like name@example.com", value)
    return text


_STRICT_EMAIL_RE = re.compile(r"[^@\s\"]+@[^@\s.\[\]]+(\.[^@\s.\[\]]+)+")


def strict_email_value(value: Any) -> str:
    """A plain address: one ``@``, no quotes or spaces, and a dotted domain (leads and
    customers, whose emails the interface requires to be valid)."""
    text = email_value(value)
    if not _STRICT_EMAIL_RE.fullmatch(text):
        raise Refused("an email address like name@example.com", value)
    return text


def int_value(value: Any) -> int:
    """An ``int`` (not a bool) that the service can store: -2**63 to 2**63-1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused("an integer", value)
    if not MIN_INT <= value <= MAX_ID:
        raise Refused("an integer from -2**63 to 2**63-1", value)
    return value


def record_id_value(value: Any) -> int:
    """The id of a record the service keeps (a customer, a product): 0 to 2**63-1, as
    an id in a path must be."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID:
        raise Refused("a record id: an integer from 0 to 2**63-1", value)
    return value


def bool_value(value: Any) -> bool:
    """``True`` or ``False``."""
    if not isinstance(value, bool):
        raise Refused("True or False", value)
    return value


def country_value(value: Any) -> int:
    """A country code of the service: 1, or 26 to 247."""
    code = int_value(value)
    if code not in _COUNTRY_CODES:
        raise Refused("a country code: 1 or 26 to 247", value)
    return code


def decimal_value(value: Any) -> Decimal:
    """A finite ``Decimal`` (or int, or numeric text) with at most two places."""
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, str)):
        raise Refused("a Decimal (or int, or numeric text) with at most two places", value)
    try:
        number = Decimal(value.strip() if isinstance(value, str) else value)
    except InvalidOperation:
        raise Refused("a number such as Decimal('12.50')", value) from None
    if not number.is_finite():
        raise Refused("a finite number", value)
    try:
        exact = number == in_cents(number)
    except InvalidOperation:  # more digits than MONEY_CONTEXT (28) holds
        raise Refused("a number of at most 26 digits before the decimal point",
                      value) from None
    if not exact:
        raise Refused("a number with at most two decimal places", value)
    return number


def in_cents(number: Decimal) -> Decimal:
    """``number`` rounded to two places in ``MONEY_CONTEXT``, whatever the caller's
    context (``InvalidOperation`` beyond 26 digits before the point)."""
    return number.quantize(_CENT, context=MONEY_CONTEXT)


def date_value(value: Any) -> dt.date:
    """A ``datetime.date`` (a ``datetime`` is one too)."""
    if not isinstance(value, dt.date):
        raise Refused("a datetime.date", value)
    return value


def dict_value(value: Any) -> dict[str, Any]:
    """A mapping with string keys (copied to a dict)."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise Refused("a dict with string keys", value)
    return dict(value)


# --- Annotated markers -------------------------------------------------------------------
class Marker:
    """An ``Annotated`` marker: a rule beyond the Python type, as a value check."""

    __slots__ = ("check", "name")

    def __init__(self, name: str, check: Callable[[Any], Any]) -> None:
        self.name = name
        self.check = check


class OneOf(Marker):
    """The value (checked against the base type first) must be one of ``values``, e.g.
    ``Annotated[int, OneOf(0, 1)]``: the field's own codes, so a member of a code list
    is refused even where its number is one of them (a contact's ``customer_type`` is
    not a ``CustomerType``: ``CustomerType.BUSINESS`` would go out as 1, another code)."""

    __slots__ = ("values",)

    def __init__(self, *values: Any) -> None:
        super().__init__("one of " + ", ".join(map(repr, values)), self._one_of)
        self.values = values

    def _one_of(self, value: Any) -> Any:
        if isinstance(value, enum.Enum) or value not in self.values:
            raise Refused(self.name, value)
        return value


#: An email address of a lead or customer: a plain address with a dotted domain.
Email = Annotated[str, Marker("email", strict_email_value)]
#: A country code of the service: 1, or 26 to 247.
CountryCode = Annotated[int, Marker("country", country_value)]
#: The id of a record named in a body (an invoice's customer, a line's product).
RecordId = Annotated[int, Marker("record id", record_id_value)]
#: Text that ends up in a form field or header: no CR, LF or other control characters.
SingleLine = Annotated[str, Marker("single line", single_line_value)]


# --- Argument checks (value, field) -> value, or InvalidInputError ----------------------
def check_text(value: Any, field: str) -> str:
    """``value`` if it is a string without NUL characters."""
    text: str = checked(text_value, value, field)
    return text


def check_single_line(value: Any, field: str) -> str:
    """``value`` if it is text without CR, LF or other control characters."""
    text: str = checked(single_line_value, value, field)
    return text


#: The usual address, accepted in one match: an "@", no quote, white space, control
#: character or surrogate (all it accepts, ``email_value`` accepts; the rest goes
#: through it).
_PLAIN_ADDRESS_RE = re.compile(
    r'[^\s"\x00-\x1f\x7f-\x9f\ud800-\udfff@]*@[^\s"\x00-\x1f\x7f-\x9f\ud800-\udfff]*')


def check_email(value: Any, field: str) -> str:
    """``value`` if it can be an email address (see the module's decision), else
    ``InvalidInputError``."""
    if value.__class__ is str and len(value) <= 254 and (
        # Printable ASCII with an "@", no space and no quote: what ``_PLAIN_ADDRESS_RE``
        # accepts of ASCII text, tested by C string methods (half the regex's cost).
        (value.isascii() and value.isprintable() and "@" in value and " " not in value
         and '"' not in value)
        or _PLAIN_ADDRESS_RE.fullmatch(value)
    ):
        return value
    text: str = checked(email_value, value, field)
    return text


def check_one_address(value: Any, field: str) -> str:
    """``value`` if ``check_email`` takes it and it names one address: one ``@`` and no
    ``,`` or ``;`` outside a quoted part. A mail's sender and recipient: a list such as
    ``"a@x.com,b@y.com"`` is no address the service could judge, but one it could split
    and deliver to each (the interface sends a mail to one recipient)."""
    text = check_email(value, field)
    bare = _unquoted(text)
    if bare.count("@") != 1 or "," in bare or ";" in bare:
        raise refuse(field, "one address like name@example.com, not a list (send one mail "
                     "per recipient)", value)
    return text


def check_number(value: Any, field: str, *, minimum: float = 0.0, strict: bool = True,
                 unit: str = "") -> float:
    """``value`` as a float if it is a finite real number above ``minimum`` (or equal to
    it when not ``strict``), else ``InvalidInputError``. ``unit`` is named in the message
    (e.g. ``"seconds"``)."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not _finite(value) or value < minimum or (strict and value == minimum)):
        what = ("a positive number" if minimum == 0 and strict
                else f"a number {'>' if strict else '>='} {minimum:g}")
        raise refuse(field, f"{what} of {unit}" if unit else what, value)
    return float(value)


def _finite(value: float) -> bool:
    """``math.isfinite``, False for an int too big for a float (not ``OverflowError``)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def check_seconds(value: Any, field: str) -> float:
    """``value`` (unchanged: an int stays an int on the wire) if it is a positive, finite
    number of seconds."""
    check_number(value, field, unit="seconds")
    seconds: float = value
    return seconds


def check_count(value: Any, field: str, minimum: int = 1) -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise refuse(field, f"an integer >= {minimum}", value)
    return value


def check_id(value: Any, field: str = "id") -> int | str:
    """``value`` if it is usable as an id path segment: an int from 0 to ``MAX_ID``, or
    a text of 1 to 64 printable characters without ``/`` (not ``.`` or ``..``), that
    neither starts nor ends with a space (``" "`` or ``"12 "`` would name another
    object than the caller meant, sent as ``%20``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value <= MAX_ID:
            return value
    elif (isinstance(value, str) and 0 < len(value) <= MAX_TEXT_ID and "/" not in value
          and value.isprintable() and value.strip() == value
          and value not in (".", "..")):
        return value
    raise refuse(field, "an int >= 0 or a non-empty text without '/' (ints up to 2**63-1, "
                 "texts of up to 64 printable characters, no surrounding spaces)", value)


def check_job_id(value: Any, field: str = "job_id") -> int:
    """A job id as an int: an int from 0 to ``MAX_ID``, or its ASCII digits in a string."""
    number: Any = value
    if isinstance(value, str):
        digits = value.strip()
        if digits.isascii() and digits.isdigit() and len(digits) <= 19:
            number = int(digits)
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_ID:
        raise refuse(field, "a job id: an integer from 0 to 2**63-1", value)
    return number


def is_http_url(text: str) -> bool:
    """True for an absolute http(s) URL with a host and a valid port (if any), without
    white space, control characters or text UTF-8 cannot encode."""
    if CONTROL_RE.search(text) or any(c.isspace() for c in text):
        return False
    try:
        text_value(text)  # UTF-8 can encode it (a lone surrogate would be dropped)
        parts = urlsplit(text)
        parts.port  # noqa: B018 -- raises ValueError for a port not 0-65535
        return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except (ValueError, Refused):
        return False


def check_bool(value: Any, field: str) -> bool:
    """``value`` if it is ``True`` or ``False`` (not a truthy string such as ``"no"``)."""
    if not isinstance(value, bool):
        raise refuse(field, "True or False", value)
    return value


def check_tls(value: Any, field: str = "ssl") -> Any:
    """``value`` if aiohttp takes it as ``ssl=``: True, False, an ``ssl.SSLContext`` or an
    ``aiohttp.Fingerprint`` (None: True, the default verification)."""
    import ssl

    import aiohttp

    if value is None:
        return True

    if not isinstance(value, (bool, ssl.SSLContext, aiohttp.Fingerprint)):
        raise refuse(field, "True, False, an ssl.SSLContext or an aiohttp.Fingerprint",
                     value)
    return value


def check_file_path(value: Any, field: str = "path") -> str:
    """``value`` (a ``str`` or ``os.PathLike`` of one) as an absolute path a file can be
    written to: no NUL, encodable as a file name, not an existing directory nor a name
    of one (ending with a separator, ``.`` or ``..``), and a last component within the
    directory's file-name limit (``NAME_MAX``)."""
    import os

    allowed = "a file path (str or os.PathLike)"
    try:
        text = os.fspath(value)
    except TypeError:
        raise refuse(field, allowed, value) from None
    if not isinstance(text, str) or not text:
        raise refuse(field, allowed, value)
    if "\x00" in text:
        raise refuse(field, "a file path without NUL characters", value)
    base = os.path.basename(text)
    try:
        name = os.fsencode(base)
    except UnicodeEncodeError:
        raise refuse(field, "a file path the file system can encode", value) from None
    target = os.path.abspath(text)
    # "out/" or "out/." names a directory: abspath would drop that and write "out".
    if base in ("", ".", "..") or os.path.isdir(target):
        raise refuse(field, "a file path, not a directory", value)
    folder = os.path.dirname(target)
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if len(name) > limit:
        raise refuse(field, f"a file name of at most {limit} bytes", value)
    return target


#: A URL's ``user:password@`` part. ``_core.credentials.redact_url`` has its own (this
#: layer sits below the core): this one is not anchored, as a refused value may not start
#: with its scheme.
_USERINFO_PASSWORD_RE = re.compile(r"(//[^/@:]*:)[^/@]*@")


def check_http_url(value: Any, field: str, *,
                   error: type[InvalidInputError] = InvalidInputError,
                   what: str = "an absolute http(s) URL") -> str:
    """``value`` if ``is_http_url`` holds for it, else ``error`` (``InvalidInputError`` or
    a subclass such as ``ConfigurationError``) naming ``field`` and ``what`` is wanted."""
    if not isinstance(value, str) or not is_http_url(value):
        # A password in the URL's user part is not shown (nor anything past 80 chars).
        shown = (_USERINFO_PASSWORD_RE.sub(r"\1REDACTED@", value) if isinstance(value, str)
                 else type(value).__name__)
        raise error(f"{field}: expected {what}, got {shown!r:.80}", field=field)
    return value
