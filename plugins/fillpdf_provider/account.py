"""An account's plan and usage (``GET /v1/account``), and the billing arithmetic on them.

Every part of FillPDF that speaks of an account uses this one ``Account`` and these
functions: the service builds its answer with ``Account.of_usage`` and reserves pages with
``added_overage``; the client reads the answer with ``Account.from_json``; the embedded
engine reports its local usage the same way; the quota guard, its sensor and the quota page
project the month with ``projected_month_pages``. So overage is counted in one place, and a
number on the quota page is the number the service bills.

It imports nothing of FillPDF's, so the service and the client may both use it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

MIN_ELAPSED_S = 3600.0
"""A period is extrapolated from at least an hour of it: a minute's burst is no month's rate."""


@dataclass(frozen=True)
class Account:
    """The plan and this month's usage; ``None`` where the plan sets no number."""

    plan: str
    period_start: str | None
    period_end: str | None
    pages_included: int | None
    pages_used: int
    pages_remaining: int | None
    overage_pages: int | None
    overage_rate_usd: float | None
    overage_cost_usd: float | None
    max_pages_per_file: int | None
    rate_limit_per_minute: int | None
    hard_stop: bool
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Fields a newer service sends that this version does not know: kept, not refused."""

    @classmethod
    def of_usage(
        cls,
        *,
        plan: str,
        pages_used: int,
        pages_included: int | None,
        overage_rate_usd: float | None,
        max_pages_per_file: int | None,
        rate_limit_per_minute: int | None,
        hard_stop: bool,
        period_start: str | None,
        period_end: str | None,
    ) -> Account:
        """The account of a plan that has used ``pages_used`` pages this period; what is
        left, the overage and its cost follow from those."""
        overage = overage_pages(pages_used, pages_included, hard_stop)
        return cls(
            plan=plan,
            period_start=period_start,
            period_end=period_end,
            pages_included=pages_included,
            pages_used=pages_used,
            pages_remaining=pages_remaining(pages_used, pages_included),
            overage_pages=overage,
            overage_rate_usd=overage_rate_usd,
            overage_cost_usd=overage_cost_usd(overage, overage_rate_usd),
            max_pages_per_file=max_pages_per_file,
            rate_limit_per_minute=rate_limit_per_minute,
            hard_stop=hard_stop,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Account:
        """The API's answer; a field this version does not know goes to ``extra``."""
        values: dict[str, Any] = {name: data.get(name) for name in CONTRACT_FIELDS}
        values["pages_used"] = int(values["pages_used"] or 0)
        values["hard_stop"] = bool(values["hard_stop"])
        return cls(**values, extra={k: v for k, v in data.items() if k not in CONTRACT_FIELDS})

    def to_json(self) -> dict[str, Any]:
        """The API's answer: the contract's fields in its order, then any ``extra``."""
        return {**{name: getattr(self, name) for name in CONTRACT_FIELDS}, **self.extra}


#: The fields of ``GET /v1/account``, in the order the API answers them.
CONTRACT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Account) if f.name != "extra")


# --------------------------------------------------------------------------- billing


def overage_pages(pages_used: int, pages_included: int | None, hard_stop: bool) -> int:
    """Pages used past the quota, billed at the overage rate: none on a plan without a
    quota, nor on one that stops at its quota (it refuses the pages instead)."""
    if hard_stop or pages_included is None:
        return 0
    return max(0, pages_used - pages_included)


def added_overage(
    pages_before: int, pages: int, pages_included: int | None, hard_stop: bool
) -> int:
    """The overage pages that ``pages`` more add to the ``pages_before`` already used."""
    return overage_pages(pages_before + pages, pages_included, hard_stop) - overage_pages(
        pages_before, pages_included, hard_stop
    )


def overage_cost_usd(overage: int, overage_rate_usd: float | None) -> float | None:
    """What ``overage`` pages cost, to the cent; ``None`` on a plan with no overage rate."""
    if overage_rate_usd is None:
        return None
    return round(overage * overage_rate_usd, 2)


def pages_remaining(pages_used: int, pages_included: int | None) -> int | None:
    """Pages left in the quota (never below 0); ``None`` on a plan without a quota."""
    if pages_included is None:
        return None
    return max(0, pages_included - pages_used)


# --------------------------------------------------------------------------- projection


def epoch_of(text: str) -> float:
    """An API timestamp (ISO 8601 UTC, ``2026-12-01T00:00:00Z``) in epoch seconds."""
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()


def _period(account: Account, now: float | None) -> tuple[float, float, float] | None:
    """The period's start and end, and how much of it counts as gone (an hour at least)."""
    if not account.period_start or not account.period_end:
        return None
    start, end = epoch_of(account.period_start), epoch_of(account.period_end)
    current = time.time() if now is None else now
    return start, end, max(current - start, MIN_ELAPSED_S)


def projected_month_pages(account: Account, now: float | None = None) -> int | None:
    """Pages used by the period's end at this period's rate so far; on a hard-stop plan
    never past the quota, since the service refuses conversions there."""
    period = _period(account, now)
    if period is None:
        return None
    start, end, elapsed = period
    projected = round(account.pages_used * (end - start) / elapsed)
    if account.hard_stop and account.pages_included is not None:
        return min(projected, account.pages_included)
    return projected


def projected_overage_usd(account: Account, now: float | None = None) -> float:
    """The overage cost the period will end with at this rate (0 on a plan without one)."""
    projected = projected_month_pages(account, now)
    if projected is None:
        return 0.0
    overage = overage_pages(projected, account.pages_included, account.hard_stop)
    return overage_cost_usd(overage, account.overage_rate_usd) or 0.0


def runs_out_at(account: Account, now: float | None = None) -> float | None:
    """On a hard-stop plan: when (epoch seconds) the quota runs out at this period's rate
    (``now`` if it already has); ``None`` if it lasts to the period's end, and on a plan
    without a hard stop."""
    included = account.pages_included
    if not account.hard_stop or included is None:
        return None
    current = time.time() if now is None else now
    if account.pages_used >= included:
        return current
    period = _period(account, current)
    if not account.pages_used or period is None:
        return None
    start, end, elapsed = period
    moment = start + elapsed * included / account.pages_used
    return moment if moment < end else None
