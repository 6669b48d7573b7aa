"""Deterministic verdict rules of the sandbox's email validation (single check and jobs)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["DEFAULT_DISPOSABLE_DOMAINS", "DEFAULT_ROLE_LOCAL_PARTS", "ValidationRules"]

DEFAULT_DISPOSABLE_DOMAINS: frozenset[str] = frozenset(
    {
        "mailinator.com",
        "trashmail.com",
        "10minutemail.com",
        "guerrillamail.com",
        "yopmail.com",
        "tempmail.com",
        "temp-mail.org",
        "throwawaymail.com",
        "sharklasers.com",
        "getnada.com",
        "dispostable.com",
        "maildrop.cc",
    }
)

DEFAULT_ROLE_LOCAL_PARTS: frozenset[str] = frozenset(
    {
        "admin",
        "administrator",
        "billing",
        "contact",
        "help",
        "hello",
        "info",
        "marketing",
        "noreply",
        "no-reply",
        "office",
        "postmaster",
        "sales",
        "support",
        "team",
        "webmaster",
    }
)

# Deliberately simple and strict: dot-atom local part, dotted domain with an alphabetic
# TLD. Quoted local parts and IP-literal domains count as bad syntax in the sandbox.
_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL_RE = re.compile(rf"^(?:{_LOCAL})@(?:{_LABEL}\.)+[A-Za-z]{{2,63}}$")


def _lower_set(values: Iterable[str]) -> frozenset[str]:
    return frozenset(v.lower() for v in values)


@dataclass(frozen=True)
class ValidationRules:
    """How the sandbox decides a verdict; every set is matched case-insensitively.

    The verdict of a well-formed address is the first rule that matches, in this order:
    ``Disposable`` (domain in ``disposable_domains``), ``Bounce`` (local part starts with
    one of ``bounce_prefixes`` or domain in ``bounce_domains``), ``Unknown`` (domain in
    ``unknown_domains``), ``CatchAll`` (domain in ``catch_all_domains``), else ``Valid``.
    ``role`` is independent of the verdict: the local part, with any ``+tag`` removed,
    is in ``role_local_parts``.
    """

    disposable_domains: frozenset[str] = DEFAULT_DISPOSABLE_DOMAINS
    role_local_parts: frozenset[str] = DEFAULT_ROLE_LOCAL_PARTS
    catch_all_domains: frozenset[str] = frozenset({"catchall.example"})
    bounce_prefixes: tuple[str, ...] = ("bounce",)
    bounce_domains: frozenset[str] = frozenset({"bounce.example"})
    unknown_domains: frozenset[str] = frozenset({"unknown.example"})
    max_length: int = field(default=254)

    def __post_init__(self) -> None:
        # Normalise once so lookups are plain set membership on lower-cased text.
        object.__setattr__(self, "disposable_domains", _lower_set(self.disposable_domains))
        object.__setattr__(self, "role_local_parts", _lower_set(self.role_local_parts))
        object.__setattr__(self, "catch_all_domains", _lower_set(self.catch_all_domains))
        object.__setattr__(self, "bounce_domains", _lower_set(self.bounce_domains))
        object.__setattr__(self, "unknown_domains", _lower_set(self.unknown_domains))
        object.__setattr__(self, "bounce_prefixes", tuple(p.lower() for p in self.bounce_prefixes))

    def is_well_formed(self, email: str) -> bool:
        """Return True if ``email`` passes the sandbox's syntax check."""
        if len(email) > self.max_length or "@" not in email:
            return False
        local = email.rsplit("@", 1)[0]
        return len(local) <= 64 and _EMAIL_RE.match(email) is not None

    def verdict(self, email: str) -> str:
        """Return the verdict (``Valid``, ``CatchAll``, ...) of a well-formed address."""
        local, _, domain = email.lower().rpartition("@")
        if domain in self.disposable_domains:
            return "Disposable"
        if domain in self.bounce_domains or local.startswith(self.bounce_prefixes):
            return "Bounce"
        if domain in self.unknown_domains:
            return "Unknown"
        if domain in self.catch_all_domains:
            return "CatchAll"
        return "Valid"

    def is_role(self, email: str) -> bool:
        """Return True if the address's local part (``+tag`` removed) is a role name."""
        local = email.lower().rpartition("@")[0].split("+", 1)[0]
        return local in self.role_local_parts
