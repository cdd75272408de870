"""Page quota and overage: what a conversion may take, and what an account has used.

Pages are reserved before the engine runs, in one conditional ``UPDATE`` that also writes a
reservation row; the conversion row replaces the reservation in one transaction when the
conversion succeeds, and the pages go back if it fails. So a free account's last pages go to
exactly one of two racing requests, a failed conversion bills nothing, no conversion is ever
partly billed, and a server that dies mid-conversion leaves a reservation that the recovery
pass gives back: pages billed always equal the pages of the conversions that exist.

The arithmetic (overage pages, their cost, what is left) is ``fillpdf_provider.account``'s,
the same the client, the quota guard and the quota page use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, delete, select, update
from sqlalchemy.engine import Connection, Engine

from fillpdf_provider.account import Account, added_overage
from fillpdf_provider.service import db_outage
from fillpdf_provider.service.clock import iso, month_bounds, period_of
from fillpdf_provider.service.db import conversions, reservations, upsert, usage
from fillpdf_provider.service.keys import Caller
from fillpdf_provider.service.plans import Plan


@dataclass(frozen=True)
class Reservation:
    """Pages taken for one conversion, and how many of them are overage."""

    conversion_id: str
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


def reserve(
    engine: Engine, caller: Caller, pages: int, now: float, conversion_id: str, owner: str
) -> Reservation | None:
    """Take ``pages`` from this month's quota, or None if a hard-stop plan can't fit them.

    If the database drops the connection, the reservation may have been written all the
    same: giving it back is owed (a no-op if it was not).
    """
    try:
        return _reserve(engine, caller, pages, now, conversion_id, owner)
    except Exception as error:
        if db_outage.is_passing(error):
            db_outage.owe_reservation(engine, conversion_id)
        raise


def _reserve(
    engine: Engine, caller: Caller, pages: int, now: float, conversion_id: str, owner: str
) -> Reservation | None:
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
        overage = added_overage(before, pages, plan.pages_included, plan.hard_stop)
        reservation = Reservation(conversion_id, caller.account_id, period, pages, overage)
        conn.execute(
            reservations.insert().values(
                conversion_id=conversion_id,
                account_id=caller.account_id,
                period=period,
                pages=pages,
                overage_pages=overage,
                owner=owner,
                created_at=now,
            )
        )
    return reservation


class ReservationLost(Exception):
    """The reservation was given back (its server was taken for dead) before the commit."""


def commit(
    engine: Engine,
    reservation: Reservation,
    row: dict[str, Any],
    also: Callable[[Connection], None] | None = None,
) -> None:
    """Record the conversion in place of its reservation: billed exactly when it exists.

    ``also`` writes what must be recorded with it (the request's idempotent answer).
    """
    with engine.begin() as conn:
        taken = conn.execute(
            delete(reservations).where(reservations.c.conversion_id == reservation.conversion_id)
        ).rowcount
        if taken != 1:
            raise ReservationLost(reservation.conversion_id)
        conn.execute(conversions.insert().values(**row))
        if also is not None:
            also(conn)


def release(engine: Engine, reservation: Reservation) -> bool:
    """Give back the pages of a conversion that failed; False if they were not held, or
    if the database can't take it now (unreachable, or its disk full): then the next
    recovery pass gives them back."""
    try:
        with engine.begin() as conn:
            return _release(conn, reservation.conversion_id)
    except Exception as error:
        if not db_outage.is_passing(error):
            raise
        db_outage.owe_reservation(engine, reservation.conversion_id)
        db_outage.note(
            error,
            "database unavailable; the pages are given back once it takes writes",
            conversion_id=reservation.conversion_id,
        )
        return False


def _release(conn: Connection, conversion_id: str) -> bool:
    row = conn.execute(
        select(reservations).where(reservations.c.conversion_id == conversion_id)
    ).first()
    if row is None:
        return False
    taken = conn.execute(
        delete(reservations).where(reservations.c.conversion_id == conversion_id)
    ).rowcount
    if taken != 1:  # released by another process between the read and the delete
        return False
    conn.execute(
        update(usage)
        .where(usage.c.account_id == row.account_id, usage.c.period == row.period)
        .values(pages_used=usage.c.pages_used - row.pages)
    )
    return True


def release_owned_by_none_of(engine: Engine, live: Select[Any], me: str) -> list[str]:
    """Give back every reservation whose server is not among ``live`` (nor ``me``)."""
    with engine.connect() as conn:
        ids = list(
            conn.execute(
                select(reservations.c.conversion_id).where(
                    reservations.c.owner != me, reservations.c.owner.not_in(live)
                )
            ).scalars()
        )
    return release_each(engine, ids)


def release_owned_by(engine: Engine, owners: set[str]) -> list[str]:
    """Give back every reservation of the dead server instances ``owners``; their ids."""
    if not owners:
        return []
    with engine.connect() as conn:
        ids = [
            row.conversion_id
            for row in conn.execute(
                select(reservations.c.conversion_id).where(reservations.c.owner.in_(owners))
            )
        ]
    return release_each(engine, ids)


def release_each(engine: Engine, ids: list[str]) -> list[str]:
    """Give back the reservations ``ids`` that are still held; their ids."""
    released = []
    for conversion_id in ids:
        with engine.begin() as conn:
            if _release(conn, conversion_id):
                released.append(conversion_id)
    return released


def account_of(engine: Engine, caller: Caller, now: float) -> Account:
    """The caller's plan and this month's live usage."""
    plan: Plan = caller.plan
    start, end = month_bounds(now)
    return Account.of_usage(
        plan=plan.name,
        pages_used=pages_used(engine, caller.account_id, period_of(now)),
        pages_included=plan.pages_included,
        overage_rate_usd=plan.overage_rate_usd,
        max_pages_per_file=plan.max_pages_per_file,
        rate_limit_per_minute=plan.rate_limit_per_minute,
        hard_stop=plan.hard_stop,
        period_start=iso(start.timestamp()),
        period_end=iso(end.timestamp()),
    )


def account_view(engine: Engine, caller: Caller, now: float) -> dict[str, object]:
    """``GET /v1/account``'s answer: ``account_of`` as the contract's JSON."""
    return account_of(engine, caller, now).to_json()
