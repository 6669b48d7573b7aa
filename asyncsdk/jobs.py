"""``asyncsdk.jobs``: kept as an import path; the job handle lives in
``asyncsdk.resources.validation.jobs``."""

from .resources.validation.jobs import ValidationJob

__all__ = ["ValidationJob"]
