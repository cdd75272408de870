"""A POST route's work run once per ``Idempotency-Key``; a repeat is answered from storage.

Only a final answer is kept: a 5xx, 408 or 429 releases the key, so a retry runs the work
again. Without the header the work simply runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import anyio
from fastapi import Request
from fastapi.responses import Response

from fillpdf_provider.service import idempotent
from fillpdf_provider.service.engine_pool import ClientGone, watch_disconnect
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
    work: Callable[[asyncio.Task[None]], Awaitable[Response]],
) -> Response:
    """Run ``work`` once per ``Idempotency-Key``; a repeat gets the stored answer.

    ``work`` gets a task that ends when the client hangs up, so PDF work can be stopped.
    """
    service = service_of(request)
    gone = asyncio.create_task(watch_disconnect(request.receive))
    try:
        return await _claimed(service, request, caller, request_hash, lambda: work(gone))
    except ClientGone:
        log(logging.INFO, "client hung up; its work was stopped", path=request.url.path)
        return error_response(
            ApiError("invalid_request", "The client closed the connection before the answer.")
        )
    finally:
        gone.cancel()


async def _claimed(
    service: Service, request: Request, caller: Caller, request_hash: str, work: Work
) -> Response:
    header = request.headers.get("idempotency-key")
    if header is None:
        return await _answer(work)
    key = idempotent.check_key(header)
    request.state.idempotency_key = key  # a conversion records its answer with its row
    stored = await _claim(service, caller, key, request_hash)
    if stored is not None:
        return Response(
            stored.body,
            status_code=stored.status,
            media_type=stored.content_type,
            headers={**stored.headers, "Idempotent-Replayed": "true"},
        )
    return await _run_and_keep(service, caller.account_id, key, work)


async def _answer(work: Work) -> Response:
    """The work's answer, an ``ApiError`` it raised included."""
    try:
        return await work()
    except ApiError as error:
        return error_response(error)


async def _claim(
    service: Service, caller: Caller, key: str, request_hash: str
) -> idempotent.Stored | None:
    """The stored answer to ``key``, or ``None`` once this request holds the key."""
    settings = service.settings
    return await idempotent.claim(
        service.db,
        caller.account_id,
        key,
        request_hash,
        service.now(),
        settings.retention_seconds,
        owner=service.instance.id,
        owner_alive=service.owner_alive,
        wait_s=settings.queue_timeout_s + settings.probe_timeout_s + settings.engine_timeout_s,
    )


async def _run_and_keep(service: Service, account_id: str, key: str, work: Work) -> Response:
    """Run the work holding ``key``: keep a final answer, release the key otherwise."""

    def release() -> None:
        idempotent.release(service.db, account_id, key)

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
    await _keep(service, account_id, key, response)
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
