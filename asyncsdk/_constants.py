"""Every default of the library, in one place.

Change a number here and every module that uses it follows; nothing else in the package
hard-codes a timeout, a retry figure or a size limit.
"""

from __future__ import annotations

#: Seconds one public call may take in all, its retries and their sleeps included.
DEFAULT_TIMEOUT = 60.0
#: Share of a call's budget one attempt of a safe operation may take before it is
#: abandoned and retried (``attempt_timeout`` left unset): a stalled attempt must not
#: eat the whole budget, and three attempts (``DEFAULT_MAX_RETRIES`` + 1) still fit.
DEFAULT_ATTEMPT_SHARE = 1.0 / 3.0
#: Retries after the first attempt, for the failures that may be retried.
DEFAULT_MAX_RETRIES = 2
#: Connections the client's own connector keeps open at most (aiohttp's ``limit``).
DEFAULT_MAX_CONNECTIONS = 100

#: Full-jitter exponential backoff: sleep uniform(0, min(cap, base * 2**retry)).
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
#: A ``Retry-After`` longer than this is capped: a misbehaving server must not park a
#: worker for an hour.
MAX_RETRY_AFTER = 60.0
#: HTTP statuses worth another attempt (for 408/5xx only when the operation is safe
#: to repeat; 429 means the request was not processed, so it is always retried).
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

#: The validation ``timeout`` query value: server-side validity time, in seconds.
DEFAULT_VALIDITY_TIMEOUT = 30

#: A JSON response larger than this (decompressed) is refused (``ResponseDecodeError``) instead of
#: being read into memory. The largest documented JSON answer is a list of contact
#: lists; 64 MiB is far above any sane account and far below trouble.
MAX_JSON_BODY_BYTES = 64 * 1024 * 1024
#: Read size for streamed downloads; memory of ``rows()`` is bounded by a few of these.
STREAM_CHUNK_SIZE = 64 * 1024
#: Bytes the event loop asks the socket (or the TLS layer) for per read on the client's
#: own connections; asyncio asks for 256 KiB. A request larger than glibc's
#: ``malloc`` mmap threshold (128 KiB) can make every read map, shrink and unmap a fresh
#: buffer, page faults included (cpython#85451): about a third of the client CPU of a
#: small answer. 64 KiB comes from the heap; a big body takes a few more reads.
RECEIVE_BYTES = 64 * 1024
#: Characters of a response body kept on an error (``APIError.body``) for inspection,
#: and of the service's error text kept as the message (``APIError.error_text``).
ERROR_BODY_PREVIEW = 16 * 1024
#: An answer that is about to be retried is read up to this size only (read on the event
#: loop, and only its message is of use); a bigger one is reported by its status alone.
MAX_RETRIED_BODY_BYTES = 1024 * 1024
#: An answer body at least this large is parsed and decoded in a worker thread, so
#: that no single stretch on the event loop exceeds about 20 ms (JSON plus models
#: decode at roughly 30 MB/s: 256 KiB is under 10 ms).
OFFLOAD_DECODE_BYTES = 256 * 1024
#: In that thread a JSON array is read from windows of this many bytes of text (decoding
#: and copying one takes well under a millisecond) ...
OFFLOAD_WINDOW_BYTES = 256 * 1024
#: ... and parsed in pieces: an array or object is read member by member where those
#: met before at the same place were this many characters or longer, and in one C call
#: (which holds the GIL, and so the loop) otherwise. 64 KiB of JSON parse in about 0.5 ms.
OFFLOAD_SLICE_CHARS = 64 * 1024
#: The worker steps aside this often (seconds) so the event loop gets the GIL at once:
#: a thread that wants it otherwise waits the interpreter's switch interval (5 ms) ...
OFFLOAD_SHARE_SECONDS = 0.002
#: ... by sleeping this long (which releases the GIL; the OS makes it about 50 us).
OFFLOAD_SHARE_PAUSE = 1e-6

#: ``check_many`` default bound on the checks in flight (and on the inputs read ahead).
#: An upper bound only: how many are on the wire is found from the service's answers
#: (``_core.pace``); room above that holds the checks waiting out a 429's wait.
DEFAULT_CHECK_CONCURRENCY = 64

#: ``ValidationJob.wait`` defaults: first interval, cap, growth factor.
DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_MAX_POLL_INTERVAL = 30.0
DEFAULT_POLL_FACTOR = 2.0

#: Environment variables read when an argument of ``Client`` is left unset.
ENV_API_KEY = "ASYNCSDK_API_KEY"
ENV_USERNAME = "ASYNCSDK_USERNAME"
ENV_BASE_URL = "ASYNCSDK_BASE_URL"

#: The package version, sent in the ``User-Agent`` (``asyncsdk.__version__``).
VERSION = "0.1.0"
#: ``Client(app_name=...)`` appended to the ``User-Agent``: printable, no spaces around.
MAX_APP_NAME_CHARS = 200
LOGGER_NAME = "asyncsdk"

#: ``ValidationJob.wait``: each pause is shortened by a random part of up to this share,
#: so workers do not poll in step (a pause never exceeds ``max_interval``).
POLL_JITTER = 0.25
#: ``ValidationJob.wait`` without a deadline gives up after this many consecutive polls
#: failed transiently (connection, 5xx, 429 after the client's retries).
MAX_WAIT_TRANSIENT_FAILURES = 10
#: A JSON download ``result`` this short and without white space may be the URL of a
#: hosted result file; longer text is CSV and streamed at once.
MAX_HOSTED_URL_CHARS = 8192

# --- Environment: credentials and logging (asyncsdk._core.credentials, asyncsdk._core.log) --------
#: Prefix of every environment variable the library reads; an area's URL variable is
#: this prefix plus its ``Client`` argument in capitals (``ASYNCSDK_CONTACTS_URL``).
ENV_PREFIX = "ASYNCSDK_"
#: ``debug`` or ``info`` (any case): the first ``Client`` attaches a stderr handler at
#: that level to the ``asyncsdk`` logger.
ENV_LOG = "ASYNCSDK_LOG"

# --- Job results (jobs/download): caps of the streamed readers --------------------------
#: A member of the JSON answer other than ``result`` larger than this is refused.
MAX_SMALL_JSON_VALUE = 64 * 1024
#: One CSV record (with its quoted line ends) larger than this is refused.
MAX_CSV_RECORD_CHARS = 1024 * 1024
#: ``rows()`` parses a result's text this much at a time: a batch of a few hundred
#: records, fewer than the collector's young-generation threshold (700), so records and
#: rows are freed before a collection ever walks them (a 64 KiB batch cost 0.1 µs a row).
CSV_BATCH_CHARS = 16 * 1024
#: A JSON download that does not say success is handed, up to this many bytes, to the
#: transport's answer interpreter (a refusal is short; a longer answer is cut here).
MAX_RESULT_ERROR_BODY = 64 * 1024
#: ``ValidationJob.wait``: the last poll before the deadline starts this long before it
#: (at most this share of the whole deadline), so that it can answer within the deadline.
WAIT_FINAL_POLL_RESERVE = 1.0
WAIT_FINAL_POLL_SHARE = 0.1
