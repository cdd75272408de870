"""Will a conversion fit the plan? Decide before anything is uploaded.

``decide`` compares the pages a run will bill with the account's quota and the run's policy;
the convert operator and the quota sensor act on its answer. It is a pure function of the
account and the policy, so what the guard does is easy to test and to explain. The
arithmetic (overage, its cost, the month's projection) is ``fillpdf_provider.account``'s,
the same the service bills with.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fillpdf_provider.account import (
    Account,
    added_overage,
    overage_cost_usd,
    overage_pages,
    projected_overage_usd,
)

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
    too_long = _too_long(account, page_counts)
    if too_long is not None:
        return QuotaDecision("fail", too_long, pages)
    if account.pages_included is None or account.pages_remaining is None:
        return QuotaDecision("go", "the plan sets no page quota", pages)
    remaining = account.pages_remaining
    if pages <= remaining:
        return QuotaDecision("go", f"{pages} pages fit in the {remaining} left", pages)
    short = f"{pages} pages needed, {remaining} of {account.pages_included} left this month"
    if not account.hard_stop:
        return _overage(account, pages, policy, short, max_overage_pages, max_overage_usd)
    if policy == "allow_overage":
        return QuotaDecision("fail", short + "; the plan has no overage", pages)
    return QuotaDecision(policy, short, pages)


def _too_long(account: Account, page_counts: list[int]) -> str | None:
    """Why a file is refused whatever the quota (over the plan's pages per file), if one is."""
    limit = account.max_pages_per_file
    too_long = [n for n in page_counts if limit is not None and n > limit]
    if not too_long:
        return None
    return (
        f"a file has {max(too_long)} pages; the {account.plan} plan converts at most "
        f"{limit} per file."
    )


def _overage(
    account: Account,
    pages: int,
    policy: str,
    short: str,
    max_overage_pages: int | None,
    max_overage_usd: float | None,
) -> QuotaDecision:
    """On a plan with overage, ``pages`` more than the quota has left: the policy, and with
    ``allow_overage`` the caps, which count the overage already incurred too."""
    included, rate = account.pages_included, account.overage_rate_usd
    new_overage = added_overage(account.pages_used, pages, included, account.hard_stop)
    cost = overage_cost_usd(new_overage, rate) or 0.0
    if policy != "allow_overage":
        return QuotaDecision(policy, f"{short}; {new_overage} pages would be overage", pages,
                             new_overage, cost)  # fmt: skip
    total_pages = overage_pages(account.pages_used + pages, included, account.hard_stop)
    total_cost = overage_cost_usd(total_pages, rate) or 0.0
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
