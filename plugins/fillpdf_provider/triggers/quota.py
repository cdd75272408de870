"""``FillPdfQuotaTrigger``: wait, in the triggerer, until the account has room for a run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from fillpdf_provider.client import FillPdfApiError, ServiceUnavailable
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.quota import _epoch


class FillPdfQuotaTrigger(BaseTrigger):
    """Fires once ``pages`` fit in what the account has left (or a new period starts).

    It polls ``GET /v1/account`` every ``poll_interval`` seconds, and right after the period
    ends, with the async client. Failures it can't wait out (a revoked key) fire an
    ``error`` event so the task fails with the reason instead of waiting forever.
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
        client = await FillPdfHook.async_client_for(self.fillpdf_conn_id)
        if client is None:
            yield TriggerEvent({"status": "ready", "reason": "embedded engine: no quota"})
            return
        async with client:
            while True:
                try:
                    account = await client.get_account()
                except ServiceUnavailable as exc:  # transient: keep waiting
                    self.log.warning("FillPDF account not reachable, retrying: %s", exc)
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
                wait = self.poll_interval
                if account.period_end:
                    wait = min(wait, max(1.0, _epoch(account.period_end) - time.time() + 1))
                self.log.info(
                    "FillPDF: %d pages needed, %d left; checking again in %.0f s",
                    self.pages, remaining, wait,
                )  # fmt: skip
                await asyncio.sleep(wait)
