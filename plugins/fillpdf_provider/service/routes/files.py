"""``GET /v1/files/{conversion_id}.pdf``: a converted file by its signed URL, without a key.

The signature is checked first (403), so a bad URL never reveals whether a conversion exists.
"""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse

from fillpdf_provider.service import conversions
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.models import error_responses
from fillpdf_provider.service.signing import verify
from fillpdf_provider.service.state import Service, service_of

router = APIRouter()


@router.get(
    "/v1/files/{conversion_id}.pdf",
    response_class=FileResponse,
    responses={
        200: {"content": {"application/pdf": {}}, "description": "The fillable PDF"},
        **error_responses(403, 404, 410, 500, 503),
    },
    summary="A converted file, by its signed URL (no API key)",
)
async def get_file(
    conversion_id: str,
    request: Request,
    expires: str | None = None,
    signature: str | None = None,
) -> FileResponse:
    service = service_of(request)
    now = _verified_until(service, conversion_id, expires, signature)
    row = await anyio.to_thread.run_sync(lambda: conversions.find(service.db, conversion_id))
    if row is None:
        raise ApiError("not_found", f"No conversion {conversion_id!r}.", param="conversion_id")
    path = conversions.file_path(service.settings.files_dir, conversion_id)
    if row["deleted"] or row["expires_at"] <= now or not path.exists():
        raise ApiError(
            "expired",
            "The conversion expired 24 hours after it was made and its file was deleted.",
            param="conversion_id",
        )
    return FileResponse(path, media_type="application/pdf", filename=f"{conversion_id}.pdf")


def _verified_until(
    service: Service, conversion_id: str, expires: str | None, signature: str | None
) -> float:
    """The time now, if the URL's signature verifies (403) and it has not expired (410)."""
    key = service.settings.signing_key or b""
    valid_until = verify(key, conversion_id, expires, signature)
    if valid_until is None:
        raise ApiError(
            "forbidden",
            "The document URL's signature does not verify; use the document_url exactly "
            "as returned, or fetch a fresh one with GET /v1/conversions/{id}.",
            param="signature",
        )
    now = service.now()
    if valid_until <= now:
        raise ApiError(
            "expired",
            "This document URL has expired; GET /v1/conversions/{id} gives a fresh one "
            "while the conversion lasts.",
            param="expires",
        )
    return now
