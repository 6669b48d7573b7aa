"""The service's code lists and verdicts.

Code lists are ``IntEnum``s with the documented numbers; text verdicts are ``str``
enums. All are **open**: the service may add values, so ``Industry(99)`` or
``Verdict("Risky")`` does not fail but returns an *unknown value*, an instance of the
enum that is not one of its members (``Industry(99) == 99``, ``Verdict("Risky") ==
"Risky"``, ``.name`` is the value as text, ``.value`` the plain value; it is not in
``list(Industry)``). Decoding an answer keeps an unknown code that way, so a field typed
``Industry | None`` is exactly that for type checkers and at run time. Text verdicts are
matched ignoring case and surrounding spaces (``Verdict("valid ")`` is ``VALID``).

Sending refuses an unknown value, and a member of another list, with
``InvalidInputError`` naming the valid codes (``is_known(value)`` tells them apart).
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = [
    "Currency",
    "CustomerType",
    "Industry",
    "JobStatus",
    "LeadSource",
    "MailState",
    "PaymentTerms",
    "ProductType",
    "Rating",
    "Unit",
    "Verdict",
    "is_known",
]


def is_known(value: object) -> bool:
    """True for a documented member of its enum, False for an unknown value."""
    return isinstance(value, enum.Enum) and type(value).__members__.get(value.name) is value


class OpenIntEnum(enum.IntEnum):
    """An ``IntEnum`` whose unknown codes are unknown values, not errors."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            unknown = int.__new__(cls, value)
            unknown._name_ = str(value)
            unknown._value_ = int(value)
            return unknown  # not cached: a hostile answer must not grow the enum
        return None


class OpenStrEnum(str, enum.Enum):
    """A ``str`` enum matched ignoring case and spaces, whose unknown texts are unknown
    values, not errors."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if not isinstance(value, str):
            return None
        key = value.strip().casefold()
        for member in cls:
            if member.value.casefold() == key:
                return member
        unknown = str.__new__(cls, value)
        unknown._name_ = value
        unknown._value_ = value
        return unknown

    def __str__(self) -> str:
        return str(self.value)


class Industry(OpenIntEnum):
    """Lead industry (code 61 is not part of the list)."""

    APPLICATION_SERVICE_PROVIDER = 2
    AEROSPACE_AND_DEFENCE = 3
    ALTERNATIVE_ENERGY = 4
    AUTOMOBILES_AND_PARTS = 5
    BANKS = 6
    BEVERAGES = 7
    CHEMICALS = 8
    CONSTRUCTION_AND_MATERIALS = 9
    DATA_TELECOM_OEM = 10
    ENTERPRISE_RESOURCE_PLANNING = 11
    ELECTRICITY = 12
    ELECTRONIC_AND_ELECTRICAL_EQUIPMENT = 13
    EQUITY_INVESTMENT_INSTRUMENTS = 14
    FINANCIAL_SERVICE = 15
    FIXED_LINE_TELECOMMUNICATIONS = 16
    FOOD_AND_DRUG_RETAILERS = 17
    FOOD_PRODUCERS = 18
    FORESTRY_AND_PAPER = 19
    GAS_WATER_AND_MULTI_UTILITY = 20
    GENERAL_INDUSTRIALS = 21
    GENERAL_RETAILERS = 22
    GOVERNMENT_MILITARY = 23
    HEALTH_CARE_EQUIPMENT_AND_SERVICES = 24
    HOUSEHOLD_GOODS_AND_HOME_CONSTRUCTION = 25
    INDUSTRIAL_ENGINEERING = 26
    INDUSTRIAL_METALS_AND_MINING = 27
    INDUSTRIAL_TRANSPORTATION = 28
    LARGE_ENTERPRISE = 29
    LEISURE_GOODS = 30
    LIFE_INSURANCE = 31
    MANAGEMENT_ISV = 32
    MEDIA = 33
    MOBILE_TELECOMMUNICATIONS = 34
    MANAGEMENT_SERVICE_PROVIDER = 35
    NETWORK_EQUIPMENT_ENTERPRISE = 36
    NON_MANAGEMENT_ISV = 37
    NONEQUITY_INVESTMENT_INSTRUMENTS = 38
    NONLIFE_INSURANCE = 39
    OPTICAL_NETWORK = 40
    OIL_AND_GAS_PRODUCERS = 41
    OIL_EQUIPMENT_SERVICES_AND_DISTRIBUTION = 42
    PERSONAL_GOODS = 43
    PHARMACEUTICALS_AND_BIOTECHNOLOGY = 44
    REAL_ESTATE_INVESTMENT_TRUST = 45
    SOFTWARE_AND_COMPUTER_SERVICE = 46
    SERVICE_PROVIDER = 47
    SMALL_MEDIUM_ENTERPRISE = 48
    STORAGE_EQUIPMENT = 49
    STORAGE_SERVICE_PROVIDER = 50
    SYSTEM_INTEGRATOR = 51
    TECHNOLOGY_HARDWARE_AND_EQUIPMENT = 52
    TOBACCO = 53
    TRAVEL_AND_LEISURE = 54
    WIRELESS_INDUSTRY = 55
    COMMUNICATIONS = 56
    CONSULTING = 57
    EDUCATIONS = 58
    FINANCIAL_SERVICES = 59
    MANUFACTURING = 60
    REAL_ESTATE = 62
    TECHNOLOGY = 63
    OTHER = 64


class LeadSource(OpenIntEnum):
    """Where a lead came from."""

    ADVERTISEMENT = 2
    COLD_CALL = 3
    EMPLOYEE_REFERRAL = 4
    EXTERNAL_REFERRAL = 5
    ONLINE_STORE = 6
    PARTNER = 7
    PUBLIC_RELATIONS = 8
    SALES_EMAIL_ALIAS = 9
    SEMINAR_PARTNER = 10
    INTERNAL_SEMINAR = 11
    TRADE_SHOW = 12
    WEB_DOWNLOAD = 13
    WEB_RESEARCH = 14
    CHAT = 15
    MICROBLOG_CHANNEL = 16
    SOCIAL_NETWORK_CHANNEL = 17
    SECOND_SOCIAL_NETWORK_CHANNEL = 18
    OTHER = 19


class Rating(OpenIntEnum):
    """A lead's rating."""

    ACQUIRED = 2
    ACTIVE = 3
    MARKET_FAILED = 4
    PROJECT_CANCELLED = 5
    SHUT_DOWN = 6


class CustomerType(OpenIntEnum):
    """Kind of customer."""

    BUSINESS = 1
    INDIVIDUAL = 2


class Currency(OpenIntEnum):
    """A customer's currency."""

    AUD = 0
    CAD = 1
    EUR = 2
    INR = 3
    USD = 4
    SAD = 5


class PaymentTerms(OpenIntEnum):
    """A customer's payment terms."""

    NET15 = 0
    NET30 = 1
    NET45 = 2
    NET60 = 3
    DUE_END_OF_MONTH = 4
    DUE_END_OF_NEXT_MONTH = 5


class ProductType(OpenIntEnum):
    """Goods or services."""

    GOODS = 0
    SERVICES = 1


class Unit(OpenIntEnum):
    """A product's unit."""

    M = 0
    CM = 1
    GM = 2
    KG = 3
    PC = 4
    DOZEN = 5
    UNITS = 6


class Verdict(OpenStrEnum):
    """The verdict on one address."""

    VALID = "Valid"
    CATCH_ALL = "CatchAll"
    UNKNOWN = "Unknown"
    DISPOSABLE = "Disposable"
    BOUNCE = "Bounce"


class JobStatus(OpenStrEnum):
    """State of a validation job."""

    PROCESSING = "processing"
    SUCCESS = "success"
    FAIL = "fail"


class MailState(OpenStrEnum):
    """What the service did with a sent mail."""

    SEND = "Send"
    QUEUED = "Queued"
