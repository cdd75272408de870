"""``FillPdfQuotaTrigger``: wait, in the triggerer, until the account has room for a run."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from fillpdf_provider.account import Account, epoch_of
from fillpdf_provider.client import (
    FillPdfApiError,
    RateLimit,
    RateLimited,
    RetryPolicy,
    ServiceUnavailable,
)
from fillpdf_provider.hooks.fillpdf import FillPdfHook, InputError, MissingConnection

RATE_SHARE = 0.5
"""The guard polls with at most this share of the plan's requests per minute; the rest is
left to the runs it guards and to everything else that uses the key."""


@dataclass(frozen=True)
class Wait:
    """How long until the next look at the account, and why, in words for the task log."""

    seconds: float
    reason: str


def next_poll(account: Account, rate: RateLimit | None, poll_interval: float, now: float) -> Wait:
    """When to look at the account again, given its plan and the key's rate-limit window."""
    wait = Wait(poll_interval, f"every {poll_interval:g} s, as poll_interval says")
    per_minute = account.rate_limit_per_minute
    floor = 60.0 / (per_minute * RATE_SHARE) if per_minute else 1.0
    if floor > wait.seconds:
        reason = (
            f"every {floor:g} s at most, to use no more than {RATE_SHARE:.0%} of the "
            f"{account.plan} plan's {per_minute} requests a minute"
            if per_minute
            else f"every {floor:g} s at most"
        )
        wait = Wait(floor, reason)
    if account.period_end:
        until_reset = epoch_of(account.period_end) - now + 1
        if until_reset < wait.seconds:
            wait = Wait(max(until_reset, floor), "right after the quota resets")
    if rate is not None and rate.remaining == 0 and rate.resets_at + 1 - now > wait.seconds:
        wait = Wait(
            rate.resets_at + 1 - now,
            f"the key has used this minute's {rate.limit} requests; waiting for the window "
            "to reset",
        )
    return wait


def _clock(seconds_from_now: float, now: float) -> str:
    moment = dt.datetime.fromtimestamp(now + seconds_from_now, dt.UTC)
    return moment.strftime("%H:%M:%S UTC")


class FillPdfQuotaTrigger(BaseTrigger):
    """Fires once ``pages`` fit in what the account has left (or a new period starts).

    It reads ``GET /v1/account`` every ``poll_interval`` seconds, but never faster than half
    the plan's rate limit allows, and not before the key's rate-limit window resets when the
    window is used up (a 429 is waited out, never retried at once). Each wait is logged with
    its reason and the time of the next look. Failures it can't wait out (a revoked key) fire
    an ``error`` event, so the task fails with the reason instead of waiting forever.
    """

    def __init__(self, fillpdf_conn_id: str, pages: int, poll_interval: float = 60.0) -> None:
        super().__init__()
        self.fillpdf_conn_id = fillpdf_conn_id
        self.pages = int(pages)
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "fillpdf_provider.triggers.quota.FillPdfQuotaTrigger",
            {
                "fillpdf_conn_id": self.fillpdf_conn_id,
                "pages": self.pages,
                "poll_interval": self.poll_interval,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            client = await FillPdfHook.async_client_for(self.fillpdf_conn_id)
        except (InputError, MissingConnection) as exc:  # the task fails with the reason
            yield TriggerEvent({"status": "error", "message": str(exc)})
            return
        if client is None:
            yield TriggerEvent({"status": "ready", "reason": "embedded engine: no quota"})
            return
        # A 429 is the trigger's to wait out (and to log); transient failures are still
        # retried by the client.
        client.retry = RetryPolicy(max_rate_limit_wait_s=0)
        async with client:
            while True:
                try:
                    account = await client.get_account()
                except RateLimited as exc:
                    now = time.time()
                    seconds = _seconds_until(exc.retry_at, now) or 60.0
                    self.log.warning(
                        "FillPDF quota: the API key is over its rate limit (other tasks may "
                        "share it); looking again at %s (in %.0f s), when the window resets.",
                        _clock(seconds, now), seconds,
                    )  # fmt: skip
                    await asyncio.sleep(seconds)
                    continue
                except ServiceUnavailable as exc:  # transient: keep waiting
                    now = time.time()
                    self.log.warning(
                        "FillPDF quota: the account is not reachable (%s); looking again at "
                        "%s (in %.0f s).",
                        exc, _clock(self.poll_interval, now), self.poll_interval,
                    )  # fmt: skip
                    await asyncio.sleep(self.poll_interval)
                    continue
                except FillPdfApiError as exc:
                    yield TriggerEvent({"status": "error", "message": str(exc)})
                    return
                remaining = account.pages_remaining
                if remaining is None or remaining >= self.pages:
                    yield TriggerEvent(
                        {"status": "ready", "pages": self.pages, "remaining": remaining,
                         "plan": account.plan}
                    )  # fmt: skip
                    return
                now = time.time()
                wait = next_poll(account, client.rate_limit, self.poll_interval, now)
                self.log.info(
                    "FillPDF quota: %d pages needed, %d of %s left%s. Looking again at %s "
                    "(in %.0f s): %s.",
                    self.pages, remaining, account.pages_included, _until(account),
                    _clock(wait.seconds, now), wait.seconds, wait.reason,
                )  # fmt: skip
                await asyncio.sleep(wait.seconds)


def _seconds_until(moment: dt.datetime | None, now: float) -> float | None:
    return None if moment is None else max(1.0, moment.timestamp() - now)


def _until(account: Account) -> str:
    """When the quota resets, and what a hard stop means for the run."""
    if not account.period_end:
        return ""
    resets = account.period_end.replace("T", " ").replace("Z", " UTC")
    if account.hard_stop:
        return (
            f"; the {account.plan} plan stops at its quota (no overage), so the run waits "
            f"until it resets at {resets}"
        )
    return f" until the quota resets at {resets}"
