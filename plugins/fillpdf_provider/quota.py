"""Will a conversion fit the plan? Decide before anything is uploaded.

``decide`` compares the pages a run will bill with the account's quota and the run's policy;
the convert operator and the quota sensor act on its answer. It is a pure function of the
account and the policy, so what the guard does is easy to test and to explain.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fillpdf_provider.client import Account

POLICIES = ("defer", "skip", "fail", "allow_overage")


@dataclass(frozen=True)
class QuotaDecision:
    """``go``, or why not and what the policy says to do: ``defer``, ``skip`` or ``fail``."""

    action: str
    reason: str
    pages: int
    overage_pages: int = 0
    overage_usd: float = 0.0


def pages_of(pdfs: Iterable[bytes]) -> list[int]:
    """Page counts of PDFs, read locally: what converting them will bill."""
    from fillpdf_provider.engine.source import open_pdf

    return [len(open_pdf(data).reader.pages) for data in pdfs]


def decide(
    account: Account,
    page_counts: list[int],
    policy: str = "defer",
    *,
    max_overage_pages: int | None = None,
    max_overage_usd: float | None = None,
) -> QuotaDecision:
    """What to do about converting files of ``page_counts`` pages on ``account``."""
    if policy not in POLICIES:
        raise ValueError(f"on_quota must be one of {POLICIES}, not {policy!r}.")
    pages = sum(page_counts)
    limit = account.max_pages_per_file
    too_long = [n for n in page_counts if limit is not None and n > limit]
    if too_long:
        return QuotaDecision(
            "fail",
            f"a file has {max(too_long)} pages; the {account.plan} plan converts at most "
            f"{limit} per file.",
            pages,
        )
    if account.pages_included is None or account.pages_remaining is None:
        return QuotaDecision("go", "the plan sets no page quota", pages)
    remaining = account.pages_remaining
    if pages <= remaining:
        return QuotaDecision("go", f"{pages} pages fit in the {remaining} left", pages)
    short = f"{pages} pages needed, {remaining} of {account.pages_included} left this month"
    if account.hard_stop:
        if policy == "allow_overage":
            return QuotaDecision("fail", short + "; the plan has no overage", pages)
        return QuotaDecision(policy, short, pages)
    used_after = account.pages_used + pages
    overage_before = max(0, account.pages_used - account.pages_included)
    new_overage = max(0, used_after - account.pages_included) - overage_before
    rate = account.overage_rate_usd or 0.0
    cost = round(new_overage * rate, 2)
    if policy != "allow_overage":
        return QuotaDecision(policy, f"{short}; {new_overage} pages would be overage", pages,
                             new_overage, cost)  # fmt: skip
    total_pages = overage_before + new_overage
    total_cost = round(total_pages * rate, 2)
    if max_overage_pages is not None and total_pages > max_overage_pages:
        return QuotaDecision(
            "fail",
            f"{short}; overage would reach {total_pages} pages, over the cap of "
            f"{max_overage_pages}",
            pages, new_overage, cost,
        )  # fmt: skip
    if max_overage_usd is not None and total_cost > max_overage_usd:
        return QuotaDecision(
            "fail",
            f"{short}; overage would reach ${total_cost:.2f}, over the cap of "
            f"${max_overage_usd:.2f}",
            pages, new_overage, cost,
        )  # fmt: skip
    return QuotaDecision("go", f"{short}; {new_overage} overage pages allowed (${cost:.2f})",
                         pages, new_overage, cost)  # fmt: skip


def report_gauges(conn_id: str, account: Account) -> None:
    """Pages used, included, remaining and projected overage cost, as Airflow gauges."""
    from airflow.sdk.observability.stats import Stats

    tags = {"conn_id": conn_id, "plan": account.plan}
    Stats.gauge("fillpdf.pages_used", account.pages_used, tags=tags)
    if account.pages_included is not None:
        Stats.gauge("fillpdf.pages_included", account.pages_included, tags=tags)
    if account.pages_remaining is not None:
        Stats.gauge("fillpdf.pages_remaining", account.pages_remaining, tags=tags)
    Stats.gauge("fillpdf.projected_overage_usd", projected_overage_usd(account), tags=tags)


def projected_month_pages(account: Account, now: float | None = None) -> int | None:
    """Pages used by the period's end at this period's rate so far."""
    import time

    if not account.period_start or not account.period_end:
        return None
    start, end = epoch_of(account.period_start), epoch_of(account.period_end)
    current = now if now is not None else time.time()
    elapsed = max(current - start, 3600.0)  # an hour's data before extrapolating
    return round(account.pages_used * (end - start) / elapsed)


def epoch_of(text: str) -> float:
    """An API timestamp (ISO 8601 UTC, ``2026-12-01T00:00:00Z``) in epoch seconds."""
    import datetime as dt

    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()


def projected_overage_usd(account: Account, now: float | None = None) -> float:
    projected = projected_month_pages(account, now)
    if projected is None or account.pages_included is None or account.hard_stop:
        return 0.0
    return round(max(0, projected - account.pages_included) * (account.overage_rate_usd or 0), 2)
