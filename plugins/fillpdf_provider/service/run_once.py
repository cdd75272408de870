"""A POST route's work run once per ``Idempotency-Key``; a repeat is answered from storage.

Only a final answer is kept: a 5xx, 408 or 429 releases the key, so a retry runs the work
again. Without the header the work simply runs. A key the database was too far gone to
release or to mark done is released by the next recovery pass (``db_outage``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import anyio
from fastapi import Request
from fastapi.responses import Response

from fillpdf_provider.service import db_outage, idempotent
from fillpdf_provider.service.engine_pool import ClientGone, Hangup
from fillpdf_provider.service.error_handlers import error_response
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.keys import Caller
from fillpdf_provider.service.logs import log
from fillpdf_provider.service.state import Service, service_of

Work = Callable[[], Awaitable[Response]]
#: Statuses a retry may answer differently: their key is released, not kept.
RETRYABLE = (408, 429)


async def run_once(
    request: Request,
    caller: Caller,
    request_hash: str,
    work: Callable[[Hangup], Awaitable[Response]],
) -> Response:
    """Run ``work`` once per ``Idempotency-Key``; a repeat gets the stored answer.

    ``work`` gets the request's ``Hangup``, so PDF work in a child can be stopped.
    """
    service = service_of(request)
    gone = Hangup(request.receive)
    try:
        return await _claimed(service, request, caller, request_hash, lambda: work(gone))
    except ClientGone:
        log(logging.INFO, "client hung up; its work was stopped", path=request.url.path)
        return error_response(
            ApiError("invalid_request", "The client closed the connection before the answer.")
        )
    finally:
        gone.close()


async def _claimed(
    service: Service, request: Request, caller: Caller, request_hash: str, work: Work
) -> Response:
    header = request.headers.get("idempotency-key")
    if header is None:
        return await _answer(work)
    key = idempotent.check_key(header)
    request.state.idempotency_key = key  # a conversion records its answer with its row
    claim = db_outage.Claim(caller.account_id, key, service.now(), service.instance.id)
    stored = await _claim(service, claim, request_hash)
    if stored is not None:
        return Response(
            stored.body,
            status_code=stored.status,
            media_type=stored.content_type,
            headers={**stored.headers, "Idempotent-Replayed": "true"},
        )
    return await _run_and_keep(service, claim, work)


async def _answer(work: Work) -> Response:
    """The work's answer, an ``ApiError`` it raised included."""
    try:
        return await work()
    except ApiError as error:
        return error_response(error)


async def _claim(
    service: Service, claim: db_outage.Claim, request_hash: str
) -> idempotent.Stored | None:
    """The stored answer to the claim's key, or ``None`` once this request holds the key."""
    settings = service.settings
    return await idempotent.claim(
        service.db,
        claim.account_id,
        claim.key,
        request_hash,
        claim.claimed_at,
        settings.retention_seconds,
        owner=claim.owner,
        owner_alive=service.owner_alive,
        wait_s=settings.queue_timeout_s + settings.probe_timeout_s + settings.engine_timeout_s,
    )


async def _run_and_keep(service: Service, claim: db_outage.Claim, work: Work) -> Response:
    """Run the work holding the claim's key: keep a final answer, release the key otherwise."""

    def release() -> None:
        idempotent.release_or_owe(service.db, claim)

    try:
        response = await work()
    except ApiError as error:
        response = error_response(error)
    except asyncio.CancelledError:
        release()  # the server is stopping: no await may run now, so release in place
        raise
    except BaseException:
        await anyio.to_thread.run_sync(release)
        raise
    if response.status_code >= 500 or response.status_code in RETRYABLE:
        await anyio.to_thread.run_sync(release)
        return response
    try:
        await _keep(service, claim.account_id, claim.key, response)
    except Exception as error:
        if not db_outage.is_passing(error):
            raise
        # The work is done: answer it. A conversion stored its answer with its row; for
        # anything else a retry runs the work again once the key is released.
        db_outage.owe_claim(service.db, claim)
        db_outage.note(error, "database unavailable; the answer was not kept for its key")
    return response


async def _keep(service: Service, account_id: str, key: str, response: Response) -> None:
    """Store ``response`` as the answer to ``key`` (only its Content-Disposition header)."""
    kept = {k: v for k, v in response.headers.items() if k.lower() == "content-disposition"}
    answer = idempotent.Stored(
        response.status_code,
        response.media_type or response.headers.get("content-type", "application/json"),
        bytes(response.body),
        kept,
    )
    await anyio.to_thread.run_sync(lambda: idempotent.finish(service.db, account_id, key, answer))
