"""What every request of one server process shares: settings, database, the PDF workers."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

import anyio
from starlette.requests import Request

from fillpdf_provider.service import conversions, ratelimit, recovery
from fillpdf_provider.service.callers import CallerCache
from fillpdf_provider.service.clock import iso
from fillpdf_provider.service.db import create_schema, make_engine
from fillpdf_provider.service.engine_pool import EnginePool
from fillpdf_provider.service.settings import Settings
from fillpdf_provider.service.signing import document_url
from fillpdf_provider.service.templates import TemplateCache

#: Stored conversions a server process remembers as live (owner and expiry) for fills.
LIVE_CACHE_SIZE = 4096


class Service:
    """What every request of one process shares: settings, database, the PDF workers."""

    def __init__(self, settings: Settings) -> None:
        settings.prepare()
        self.settings = settings
        self.db = make_engine(settings.resolved_database_url())
        create_schema(self.db)
        self.instance = recovery.Instance.of_this_process()
        self.pool = EnginePool(
            max_children=settings.max_children,
            max_queue=settings.max_queue,
            queue_timeout_s=settings.queue_timeout_s,
            memory_bytes=settings.engine_memory_bytes,
            max_form_fields=settings.max_form_fields,
        )
        self._live: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self.templates = TemplateCache(settings.template_cache_bytes)
        self.callers = CallerCache()
        #: Background reads of keys whose cached check is half-way to lapsing (``auth``),
        #: held here while they run (the event loop keeps only weak references).
        self.renewals: set[asyncio.Task[None]] = set()
        self.rates = ratelimit.Leases()

    def now(self) -> float:
        return self.settings.clock.now()

    def owner_alive(self, owner: str | None) -> bool:
        return recovery.owner_alive(self.db, owner, self.instance)

    async def live_conversion(self, conversion_id: str, account_id: str) -> None:
        """404/410 unless the account's conversion is live; hits the database once per id.

        A conversion's owner and expiry never change, and it is only ever deleted after it
        expires, so a conversion seen live stays live until its ``expires_at``.
        """
        now = self.now()
        known = self._live.get(conversion_id)
        if known is not None and known[0] == account_id and now < known[1]:
            self._live.move_to_end(conversion_id)
            return
        row = await anyio.to_thread.run_sync(
            conversions.live, self.db, conversion_id, account_id, now
        )
        self._live[conversion_id] = (row["account_id"], float(row["expires_at"]))
        while len(self._live) > LIVE_CACHE_SIZE:
            self._live.popitem(last=False)

    def result_body(self, row: dict[str, Any]) -> dict[str, Any]:
        """A conversion result with a signed URL on the configured public address (never
        the request's, whose host the client sets)."""
        expires = int(row["expires_at"])
        key = self.settings.signing_key or b""
        url = document_url(self.settings.public_base_url, key, row["id"], expires)
        return {**row["result"], "document_url": url, "expires_at": iso(expires)}


def service_of(request: Request) -> Service:
    """The process's ``Service``, which ``create_app`` put on the app's state."""
    service: Service = request.app.state.service
    return service
