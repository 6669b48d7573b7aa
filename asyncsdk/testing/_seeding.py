"""What a test plants in a sandbox: accounts and credit, verified domains, hosted files,
finished jobs, and stored objects (``Sandbox`` inherits these methods)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from asyncsdk import InvalidInputError

from ._limits import RateLimits
from ._resources import new_contact_record
from ._state import Account, HostedFile, JobOutcome, SandboxState, not_serving
from ._synthetic import synthetic_job

__all__ = ["DEMO_SENDER_DOMAIN", "SandboxData"]

DEMO_SENDER_DOMAIN = "example.com"


class SandboxData:
    """The planting half of ``Sandbox``: every method here changes ``self.state``."""

    state: SandboxState
    api_key: str
    limits: RateLimits

    # -- accounts, credit, domains -----------------------------------------------------------
    def add_account(self, api_key: str, username: str, *, credit: int | None = None) -> Account:
        """Add (or replace) an account; ``credit=None`` is unlimited.

        Returns:
            The account, whose ``credit`` can be read and changed.
        """
        account = Account(api_key, username, credit)
        self.state.accounts[api_key] = account
        return account

    def account(self, api_key: str | None = None) -> Account:
        """The account with ``api_key`` (default: the primary account).

        Raises:
            KeyError: for an unknown key.
        """
        return self.state.accounts[api_key or self.api_key]

    @property
    def credit(self) -> int | None:
        """The primary account's remaining credit (None: unlimited)."""
        return self.account().credit

    @credit.setter
    def credit(self, value: int | None) -> None:
        self.account().credit = value

    def verify_domain(self, domain: str) -> None:
        """Let mail be sent from addresses at ``domain`` (exact, case-insensitive).

        Raises:
            InvalidInputError: ``domain`` is no domain name (not a str, empty, or with
                an ``@`` or a space).
        """
        if not isinstance(domain, str) or not domain.strip(".") or any(
                c in domain for c in "@ \t\r\n/"):
            raise InvalidInputError(f"verified_domains: expected a domain name such as "
                                    f"'example.com', got {domain!r}", field="verified_domains")
        self.state.verified_domains.add(domain.lower())

    def use_clock(self, now: Callable[[], float]) -> None:
        """Time the sandbox on ``now`` from here on (``sb.use_clock(clock.now)`` with a
        client's ``VirtualClock``): jobs' ``job_seconds`` and the service limit
        (``sb.limits.use_clock``). A job already running keeps the time it has left.

        Raises:
            InvalidInputError: ``now`` is not callable.
        """
        self.limits.use_clock(now)  # checks it
        state = self.state
        shift = now() - state.clock()
        for job in state.jobs.values():
            job.created_at += shift
        state.clock = now

    # -- files and jobs ------------------------------------------------------------------------
    def host_file(
        self, data: bytes | str, name: str = "list.csv", *, content_type: str = "text/csv"
    ) -> str:
        """Serve ``data`` from the sandbox, without credentials, with the
        ``Content-Type`` given (a ``charset`` parameter included).

        Returns:
            Its URL, ``http://127.0.0.1:PORT/files/<token>/<name>``, ``name``
            percent-encoded (any name but ``""``, ``.`` and ``..``).
        Raises:
            RuntimeError: before ``start()``. InvalidInputError: a ``name`` no URL
                path segment can hold.
        """
        if not isinstance(name, str) or name in ("", ".", ".."):
            raise InvalidInputError(f"name: expected a file name, got {name!r}", field="name")
        if not self.state.base_url or self.state.closed:  # no port yet, or none now
            raise RuntimeError(not_serving(self.state))
        raw = data.encode() if isinstance(data, str) else bytes(data)
        return self.state.host(HostedFile(name, content_type, data=raw))

    def make_job(
        self, rows: int, *, api_key: str | None = None, status: JobOutcome = "success"
    ) -> int:
        """Create a finished job with ``rows`` synthetic result rows, made lazily.

        Row ``i`` has address ``<prefix><i>@<domain>`` from a fixed cycle of ten
        (verdicts Valid, CatchAll, Unknown, Disposable, Bounce; role every fifth row),
        and Name ``User <i>``. No credit is spent.

        Returns:
            The job id.
        Raises:
            InvalidInputError: ``rows`` not an int >= 0, ``status`` neither
                ``"success"`` nor ``"fail"``.
        """
        _check_count(rows, "rows")
        _check_outcome(status)
        return synthetic_job(self.state, self.account(api_key).api_key, rows, status)

    def fail_next_job(self, count: int = 1) -> None:
        """Make the next ``count`` jobs created by jobs/create end in ``fail``.

        Raises:
            InvalidInputError: ``count`` not an int >= 0.
        """
        _check_count(count, "count")
        self.state.fail_next_jobs += count

    def finish_job(self, job_id: int, status: JobOutcome = "success") -> None:
        """End a job now with ``status``, whatever its polls or timer say.

        Raises:
            KeyError: for an unknown job id. InvalidInputError: ``status`` neither
                ``"success"`` nor ``"fail"``.
        """
        _check_outcome(status)
        self.state.jobs[job_id].forced = status

    # -- stored objects (no validation: any shape may be planted) ---------------------------
    def seed_contact_list(
        self,
        name: str,
        records: Iterable[Mapping[str, Any]] = (),
        *,
        is_email: bool = True,
        is_push: bool = False,
        is_sms: bool = False,
        app_id: str | None = None,
    ) -> int:
        """Add a contact list; each record gets the defaults and a uuid unless given one.

        Returns:
            The list id.
        """
        state = self.state
        list_id = state.next_id("contact_list")
        state.contact_lists[list_id] = {
            "name": name,
            "is_email": is_email,
            "is_push": is_push,
            "is_sms": is_sms,
            "app_id": app_id,
            "records": [new_contact_record(state, r) for r in records],
        }
        return list_id

    def seed_lead(self, data: Mapping[str, Any]) -> int:
        """Add a lead as given. Returns: its id."""
        return self._seed("lead", self.state.leads, data)

    def seed_customer(self, data: Mapping[str, Any]) -> int:
        """Add a customer as given. Returns: its id."""
        return self._seed("customer", self.state.customers, data)

    def seed_product(self, data: Mapping[str, Any]) -> int:
        """Add a product as given. Returns: its id."""
        return self._seed("product", self.state.products, data)

    def seed_invoice(self, data: Mapping[str, Any]) -> int:
        """Add an invoice (the interface cannot create them). Returns: its id."""
        return self._seed("invoice", self.state.invoices, data)

    def _seed(self, kind: str, store: dict[int, dict[str, Any]], data: Mapping[str, Any]) -> int:
        obj_id = self.state.next_id(kind)
        store[obj_id] = {k: v for k, v in data.items() if k != "id"}
        return obj_id

    def _seed_demo(self) -> None:
        """Plant the demo data set (``demo_data=True``): two contact lists, two leads, two
        customers, two products, two invoices, and the verified domain ``example.com``."""
        self.verify_domain(DEMO_SENDER_DOMAIN)
        self.seed_contact_list(
            "Newsletter",
            [
                {"email": "ada@example.com", "customer_name": "Ada", "mobile": 447700900001},
                {"email": "grace@example.org", "customer_name": "Grace", "mobile": 447700900002},
                {"email": "info@example.net", "customer_name": "Info desk", "mobile": 447700900003},
            ],
        )
        self.seed_contact_list(
            "Push subscribers",
            [{"email": "linus@example.com", "mobile": 447700900004, "device_id": "tok-1"}],
            is_email=False,
            is_push=True,
        )
        lead = {"industry": 63, "source": 13, "funnel": "Default", "status": 1, "rating": 3}
        self.seed_lead({"name": "Ada Lovelace", "email": "ada@example.com",
                        "company": "Analytical Engines", **lead})  # fmt: skip
        self.seed_lead({"name": "Alan Turing", "email": "alan@example.org",
                        "company": "Bletchley Ltd", **lead, "rating": 2})  # fmt: skip
        first = self.seed_customer({"customer_type": 1, "first_name": "Grace",
                                    "last_name": "Hopper", "company_name": "Cobol Inc",
                                    "email": "grace@example.org", "currency": 4})  # fmt: skip
        self.seed_customer({"customer_type": 2, "first_name": "Linus", "last_name": None,
                            "email": "linus@example.com", "currency": 2})  # fmt: skip
        widget = self.seed_product({"product_type": 0, "name": "Widget", "unit": 4,
                                    "selling_price": "19.99", "sku": "W-1"})  # fmt: skip
        self.seed_product({"product_type": 1, "name": "Consulting hour", "unit": 6,
                           "selling_price": "150.00"})  # fmt: skip
        line = {"quantity": "3.00", "rate": "19.99", "discount": "0.00", "discount_unit": 0,
                "products": widget}  # fmt: skip
        for number in ("INV-0001", "INV-0002"):
            self.seed_invoice({"invoice_number": number, "order_number": "", "terms": 1,
                               "invoice_date": "2024-01-15", "due_date": "2024-02-14",
                               "subject": "Widgets", "status": 0, "invoice_type": 0,
                               "is_recurring_invoices": False, "customer": first,
                               "productinvoices": [line]})  # fmt: skip


def _check_count(value: object, field: str) -> None:
    if type(value) is not int or value < 0:
        raise InvalidInputError(f"{field}: expected an int >= 0, got {value!r}", field=field)


def _check_outcome(status: object) -> None:
    # Another text would be answered as the job's status, which the service never sends.
    if status not in ("success", "fail") or not isinstance(status, str):
        raise InvalidInputError(f"status: expected 'success' or 'fail', got {status!r}",
                                field="status")
