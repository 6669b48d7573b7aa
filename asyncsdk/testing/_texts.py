"""The service's error texts, verbatim from the interface document (spelling included).

Kept in one place so every handler answers with exactly the text the document lists for
its operation; note that jobs/status and jobs/download spell the missing-parameter text
without the trailing dot.
"""

from __future__ import annotations

REQUIRED = "Required parameter missing or invalid."
REQUIRED_NO_DOT = "Required parameter missing or invalid"
AUTH_FAILED = "User authentication failed. Wrong API Key or username."
EMAIL_FORMAT = "Email Format is not correct."
NO_CREDIT = "The request was refused due to insufficent credit."
NOT_DOWNLOADABLE = "File is not downloadable."
FILE_FORMAT = "File Format is not correct."
JOB_NOT_YOURS = "This Job Id not associated to your users."
JOB_PROCESSING = "List is currently Processing. Please wait some times."
METHOD_NOT_CORRECT = "Request method is not correct."
UNVERIFIED_SENDER = "Domain authentication failed. Unverified Sender found."

# Not from the document (it shows no text for these cases); chosen by the sandbox.
JOB_FAILED_DOWNLOAD = "This job failed; there is no result to download."
THROTTLED = "Request was throttled."

# Resource areas (contacts, leads, customers, products, invoices): Django REST style.
UNAUTHORIZED_DETAIL = "Authentication credentials were not provided or are invalid."
NOT_FOUND_DETAIL = "Not found."
FIELD_REQUIRED = "This field is required."
