"""One conversion, from an upload to a stored, billed row and its answer.

The pages are reserved (402 if they do not fit the quota) once the child has counted them,
before the PDF work; the conversion row replaces its reservation in one transaction with the
idempotent answer. Whatever fails in between gives the pages back and leaves no file; a
full disk (the output's, or the database's) is answered 503 (``disk_full``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
from fastapi import Request
from fastapi.responses import JSONResponse, Response
from sqlalchemy.engine import Connection

from fillpdf_provider.service import billing, conversions, disk_full, idempotent, isolation
from fillpdf_provider.service.clock import period_of
from fillpdf_provider.service.engine_pool import Hangup
from fillpdf_provider.service.errors import ApiError, engine_error
from fillpdf_provider.service.keys import Caller
from fillpdf_provider.service.state import Service
from fillpdf_provider.service.uploads import PDF_MAGIC_WINDOW, has_pdf_header


async def convert(
    service: Service,
    caller: Caller,
    upload: Path,
    detect: str,
    request: Request,
    gone: Hangup,
    schema: str | None = None,
) -> Response:
    """Convert the PDF at ``upload`` for ``caller``; 415 at once if it is not a PDF."""
    with upload.open("rb") as handle:
        head = handle.read(PDF_MAGIC_WINDOW)
    if not has_pdf_header(head):
        raise ApiError(
            "unsupported_file",
            "The file is not a PDF (no %PDF- header); upload the form as a PDF.",
            param="file",
        )
    return await _Conversion(service, caller).run(upload, detect, request, gone.task, schema)


class _Conversion:
    """One conversion's id, output file and the pages it has reserved."""

    def __init__(self, service: Service, caller: Caller) -> None:
        self.service = service
        self.caller = caller
        self.conversion_id = conversions.new_id()
        self.output = conversions.file_path(service.settings.files_dir, self.conversion_id)
        self.now = service.now()
        self.taken: list[billing.Reservation] = []

    async def run(
        self,
        upload: Path,
        detect: str,
        request: Request,
        gone: asyncio.Task[None],
        schema: str | None,
    ) -> Response:
        settings = self.service.settings
        try:
            result = await self.service.pool.convert(
                upload,
                detect,
                self.output,
                reserve=self.reserve_pages,
                probe_timeout=settings.probe_timeout_s,
                timeout=settings.engine_timeout_s,
                schema=schema,
                gone=gone,
            )
            return await self._record(result, "schema" if schema is not None else detect, request)
        except asyncio.CancelledError:
            self.give_back()  # the server is stopping: no await may run now
            raise
        except BaseException as exc:
            await anyio.to_thread.run_sync(self.give_back)
            if not self.taken:
                self.output.unlink(missing_ok=True)
            error = self._api_error(exc)
            if error is None:
                raise
            raise error from None

    async def reserve_pages(self, pages: int) -> None:
        """Called by the pool once the pages are counted: refuse the file (too many pages
        for the plan, or no room in a hard-stop quota), or reserve them."""
        caller = self.caller
        limit = caller.plan.max_pages_per_file
        if limit is not None and pages > limit:
            raise ApiError(
                "unsupported_file",
                f"The PDF has {pages} pages; the {caller.plan.name} plan converts at most "
                f"{limit} per file. Split the file or move to a larger plan.",
                param="file",
            )
        service = self.service
        reservation = await anyio.to_thread.run_sync(
            billing.reserve,
            service.db,
            caller,
            pages,
            self.now,
            self.conversion_id,
            service.instance.id,
        )
        if reservation is None:
            raise await self._over_quota(pages)
        self.taken.append(reservation)

    async def _over_quota(self, pages: int) -> ApiError:
        plan = self.caller.plan
        used = await anyio.to_thread.run_sync(
            billing.pages_used, self.service.db, self.caller.account_id, period_of(self.now)
        )
        left = max(0, (plan.pages_included or 0) - used)
        return ApiError(
            "quota_exceeded",
            f"The PDF has {pages} pages and {left} of this month's "
            f"{plan.pages_included} included pages are left; the {plan.name} "
            "plan stops at its quota. Wait for the 1st (UTC) or upgrade.",
            param="file",
        )

    def give_back(self) -> None:
        """Release the reserved pages; a conversion that was not recorded keeps no file."""
        for reservation in self.taken:
            if billing.release(self.service.db, reservation):
                self.output.unlink(missing_ok=True)

    async def _record(self, result: dict[str, Any], detect: str, request: Request) -> Response:
        """Bill the conversion and store its row (and idempotent answer); return the answer."""
        settings = self.service.settings
        caller = self.caller
        row = {
            "id": self.conversion_id,
            "account_id": caller.account_id,
            "key_id": caller.key_id,
            "created_at": self.now,
            "expires_at": self.now + settings.retention_seconds,
            "pages": result["pages"],
            "overage_pages": self.taken[0].overage_pages,
            "detect": detect,
            "result": {**result, "conversion_id": self.conversion_id},
            "deleted": False,
        }
        response = JSONResponse(self.service.result_body(row))
        key: str | None = getattr(request.state, "idempotency_key", None)
        answer = idempotent.Stored(200, "application/json", bytes(response.body), {})

        def store_answer(conn: Connection) -> None:
            if key is not None:
                idempotent.finish_in(conn, caller.account_id, key, answer)

        await anyio.to_thread.run_sync(
            billing.commit, self.service.db, self.taken[0], row, store_answer if key else None
        )
        return response

    def _api_error(self, exc: BaseException) -> ApiError | None:
        """The answer to a failed conversion, or ``None`` to let ``exc`` through."""
        if isinstance(exc, isolation.EngineFailure):
            if exc.error_type == "service_unavailable":  # the child's output found no room
                return disk_full.out_of_space(self.output.parent)
            return engine_error(exc, "file")
        if disk_full.is_disk_full(exc):  # the database's disk (SQLite's is the data dir's)
            self.output.unlink(missing_ok=True)  # the commit was rolled back: no one owns it
            return disk_full.out_of_space(self._database_location())
        if isinstance(exc, billing.ReservationLost):
            self.output.unlink(missing_ok=True)  # the commit failed: nothing owns the file
            return ApiError(
                "service_unavailable",
                "The conversion was interrupted by a server restart and nothing was billed; "
                "send it again.",
                headers={"Retry-After": "1"},
            )
        return None

    def _database_location(self) -> str:
        """Where the database writes: SQLite's file, else its URL (no password)."""
        url = self.service.db.url
        if url.get_backend_name() == "sqlite" and url.database:
            return url.database
        return url.render_as_string()
