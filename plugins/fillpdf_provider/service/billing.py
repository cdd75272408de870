"""Page quota and overage: what a conversion may take, and what an account has used.

Pages are reserved before the engine runs, in one conditional ``UPDATE``, and given back if
the conversion fails: a free account's last pages go to exactly one of two racing requests,
a failed conversion bills nothing, and no conversion is ever partly billed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from fillpdf_provider.service.clock import iso, month_bounds, period_of
from fillpdf_provider.service.db import upsert, usage
from fillpdf_provider.service.keys import Caller
from fillpdf_provider.service.plans import Plan


@dataclass(frozen=True)
class Reservation:
    """Pages taken for one conversion, and how many of them are overage."""

    account_id: str
    period: str
    pages: int
    overage_pages: int


def pages_used(engine: Engine, account_id: str, period: str) -> int:
    with engine.connect() as conn:
        value = conn.execute(
            select(usage.c.pages_used).where(
                usage.c.account_id == account_id, usage.c.period == period
            )
        ).scalar()
    return int(value or 0)


def reserve(engine: Engine, caller: Caller, pages: int, now: float) -> Reservation | None:
    """Take ``pages`` from this month's quota, or None if a hard-stop plan can't fit them."""
    period = period_of(now)
    plan = caller.plan
    with engine.begin() as conn:
        conn.execute(
            upsert(engine, usage)
            .values(account_id=caller.account_id, period=period, pages_used=0)
            .on_conflict_do_nothing()
        )
        statement = (
            update(usage)
            .where(usage.c.account_id == caller.account_id, usage.c.period == period)
            .values(pages_used=usage.c.pages_used + pages)
            .returning(usage.c.pages_used)
        )
        if plan.hard_stop and plan.pages_included is not None:
            statement = statement.where(usage.c.pages_used + pages <= plan.pages_included)
        used = conn.execute(statement).scalar()
    if used is None:
        return None
    before = int(used) - pages
    overage = plan.overage_pages(int(used)) - plan.overage_pages(before)
    return Reservation(caller.account_id, period, pages, overage)


def release(engine: Engine, reservation: Reservation) -> None:
    """Give back the pages of a conversion that failed."""
    with engine.begin() as conn:
        conn.execute(
            update(usage)
            .where(
                usage.c.account_id == reservation.account_id,
                usage.c.period == reservation.period,
            )
            .values(pages_used=usage.c.pages_used - reservation.pages)
        )


def account_view(engine: Engine, caller: Caller, now: float) -> dict[str, object]:
    """``GET /v1/account``: the plan and this month's live usage."""
    plan: Plan = caller.plan
    start, end = month_bounds(now)
    used = pages_used(engine, caller.account_id, period_of(now))
    included = plan.pages_included
    overage = plan.overage_pages(used)
    rate = plan.overage_rate_usd
    return {
        "plan": plan.name,
        "period_start": iso(start.timestamp()),
        "period_end": iso(end.timestamp()),
        "pages_included": included,
        "pages_used": used,
        "pages_remaining": max(0, included - used) if included is not None else None,
        "overage_pages": overage,
        "overage_rate_usd": rate,
        "overage_cost_usd": round(overage * rate, 2) if rate is not None else None,
        "max_pages_per_file": plan.max_pages_per_file,
        "rate_limit_per_minute": plan.rate_limit_per_minute,
        "hard_stop": plan.hard_stop,
    }
