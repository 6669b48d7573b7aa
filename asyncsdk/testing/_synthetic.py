"""Finished jobs of synthetic result rows, made lazily (``Sandbox.make_job``): a million
rows cost no memory until they are downloaded, and stream fast enough not to slow the
client under test."""

from __future__ import annotations

from collections.abc import Iterator

from ._state import JobOutcome, Row, SandboxState
from ._validation import RESULT_HEADER, role_texts

__all__ = ["synthetic_job"]

# Synthetic result rows cycle through this pattern: (local part prefix, domain). The
# verdicts come from the sandbox's rules, computed once per pattern entry.
PATTERN: tuple[tuple[str, str], ...] = (
    ("user", "example.com"),
    ("user", "example.org"),
    ("support+", "example.com"),
    ("user", "catchall.example"),
    ("user", "example.net"),
    ("user", "unknown.example"),
    ("user", "mailinator.com"),
    ("bounce", "example.com"),
    ("info+", "example.org"),
    ("user", "example.com"),
)


def synthetic_job(state: SandboxState, owner: str, rows: int, status: JobOutcome) -> int:
    """Create a job of ``owner`` that has ended in ``status`` with ``rows`` rows; its id.

    Row ``i`` has address ``<prefix><i>@<domain>`` from ``PATTERN`` and Name ``User <i>``.
    """
    rules = state.rules
    pattern = [
        (prefix, domain, rules.verdict(f"{prefix}0@{domain}"), rules.is_role(f"{prefix}@x.y"))
        for prefix, domain in PATTERN
    ]

    def generate() -> Iterator[Row]:
        period = len(pattern)
        for i in range(rows):
            prefix, domain, verdict, role = pattern[i % period]
            yield (f"{prefix}{i}@{domain}", f"User {i}", verdict, role)

    def render(role_format: str, chunk_size: int) -> Iterator[str]:
        # Same rows as generate(), but written in batches: a million rows stream
        # without the csv module's per-row cost slowing the client under test.
        yes, no = role_texts(role_format)
        lines = [(p, d, v, yes if r else no) for p, d, v, r in pattern]
        period = len(lines)
        yield ",".join(RESULT_HEADER) + "\r\n"
        batch = max(1, chunk_size // 48)
        for start in range(0, rows, batch):
            yield "".join(
                [
                    f"{p}{i}@{d},User {i},{v},{r}\r\n"
                    for i in range(start, min(start + batch, rows))
                    for p, d, v, r in (lines[i % period],)
                ]
            )

    job = state.new_job(owner, generate, rows, 0.0, ended=status)
    job.render = render
    return job.id
