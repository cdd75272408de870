"""Plans and their limits, from the service specification's plan table."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """What an account may do each month and each minute.

    ``None`` means the plan sets no number (an enterprise account without that setting).
    """

    name: str
    pages_included: int | None
    overage_rate_usd: float | None
    max_pages_per_file: int | None
    rate_limit_per_minute: int | None
    hard_stop: bool


PLANS: dict[str, Plan] = {
    "developer": Plan("developer", 25, None, 10, 10, hard_stop=True),
    "pro": Plan("pro", 60, 0.90, 100, 60, hard_stop=False),
    "scale": Plan("scale", 400, 0.80, 300, 300, hard_stop=False),
    "enterprise": Plan("enterprise", None, None, None, None, hard_stop=False),
}


def enterprise_plan(
    *,
    pages_included: int | None,
    overage_rate_usd: float | None,
    max_pages_per_file: int | None,
    rate_limit_per_minute: int | None,
    hard_stop: bool,
) -> Plan:
    """An enterprise account's plan: its limits come from the account's own settings."""
    return Plan(
        "enterprise",
        pages_included,
        overage_rate_usd,
        max_pages_per_file,
        rate_limit_per_minute,
        hard_stop,
    )
