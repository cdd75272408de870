"""``FillPdfQuotaSensor``: hold a run until the FillPDF account has room for it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from airflow.sdk import BaseSensorOperator, Context, conf
from airflow.sdk.exceptions import AirflowFailException

from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.quota import pages_of, report_gauges
from fillpdf_provider.storage import expand, read_bytes
from fillpdf_provider.triggers.quota import FillPdfQuotaTrigger


class FillPdfQuotaSensor(BaseSensorOperator):
    """Wait until ``pages`` (or the pages of ``pdfs``) fit in the account's quota.

    In poke (or reschedule) mode it looks at the account every ``poke_interval`` seconds
    through one client for the whole run. Deferred, the wait happens in the triggerer
    instead of a worker slot, looking at the account every ``poke_interval`` seconds but
    never faster than half the plan's rate limit allows, and logging each wait with its
    reason and the time of the next look. The embedded engine has no quota: it never waits.

    :param pages: pages the coming conversions will bill; or give ``pdfs`` to count them.
    :param pdfs: paths, globs or URIs of the PDFs to convert. Templated.
    :param fillpdf_conn_id: the FillPDF connection (default ``fillpdf_default``). Templated.
    :param deferrable: wait in the triggerer (default: the ``[operators]
        default_deferrable`` setting, False unless set, as Airflow's own sensors do).
    """

    template_fields: Sequence[str] = ("pdfs", "fillpdf_conn_id")

    def __init__(
        self,
        *,
        pages: int | None = None,
        pdfs: str | list[str] | None = None,
        fillpdf_conn_id: str = FillPdfHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        if (pages is None) == (pdfs is None):
            raise ValueError("Give pages or pdfs.")
        kwargs.setdefault("poke_interval", 60)
        super().__init__(**kwargs)
        self.pages = pages
        self.pdfs = pdfs
        self.fillpdf_conn_id = fillpdf_conn_id
        self.deferrable = deferrable

    @cached_property
    def hook(self) -> FillPdfHook:
        """One hook, so one client, for every poke of a run (made once the conn id is
        rendered); ``execute`` closes it."""
        return FillPdfHook(self.fillpdf_conn_id)

    def _needed(self) -> int:
        if self.pages is not None:
            return int(self.pages)
        return sum(pages_of(read_bytes(p) for p in expand(self.pdfs or [])))

    def _has_room(self, needed: int) -> bool:
        account = self.hook.get_account()
        report_gauges(self.fillpdf_conn_id, account)
        remaining = account.pages_remaining
        self.log.info("FillPDF: %d pages needed, %s left", needed, remaining)
        return remaining is None or remaining >= needed

    def poke(self, context: Context) -> bool:
        return self._has_room(self._needed())

    def execute(self, context: Context) -> Any:
        with self.hook:
            if not self.deferrable:
                return super().execute(context)
            needed = self._needed()  # the PDFs are read and counted once
            if self._has_room(needed):
                return None
        self.defer(
            trigger=FillPdfQuotaTrigger(self.fillpdf_conn_id, needed, self.poke_interval),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> None:
        if event.get("status") != "ready":
            raise AirflowFailException(f"FillPDF quota wait failed: {event.get('message')}")
        self.log.info("FillPDF: room for %s pages (%s left)", event.get("pages"),
                      event.get("remaining"))  # fmt: skip
