"""Stored conversions: their records, their files, and the sweeper that ends them.

A conversion lives 24 hours from creation. After that its file is deleted and its record is
kept as a tombstone, so a late request gets 410 ``expired`` rather than 404.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine

from fillpdf_provider.service.db import conversions, idempotency
from fillpdf_provider.service.errors import ApiError

ID_PATTERN = re.compile(r"conv_[0-9a-f]{24}")


def new_id() -> str:
    return "conv_" + secrets.token_hex(12)


def file_path(files_dir: Path, conversion_id: str) -> Path:
    return files_dir / f"{conversion_id}.pdf"


def find(engine: Engine, conversion_id: str) -> dict[str, Any] | None:
    if not ID_PATTERN.fullmatch(conversion_id):  # never send junk (NUL bytes...) to the database
        return None
    with engine.connect() as conn:
        row = conn.execute(select(conversions).where(conversions.c.id == conversion_id)).first()
    return dict(row._mapping) if row is not None else None


def live(engine: Engine, conversion_id: str, account_id: str, now: float) -> dict[str, Any]:
    """The caller's conversion, or 404 (unknown, or another account's) / 410 (expired)."""
    row = find(engine, conversion_id)
    if row is None or row["account_id"] != account_id:
        raise ApiError(
            "not_found",
            f"No conversion {conversion_id!r} for this account; use the conversion_id that "
            "POST /v1/convert returned with this key's account.",
            param="conversion_id",
        )
    if row["deleted"] or row["expires_at"] <= now:
        raise ApiError(
            "expired",
            f"Conversion {conversion_id!r} expired 24 hours after it was made and its file "
            "was deleted; convert the PDF again.",
            param="conversion_id",
        )
    return row


def sweep(engine: Engine, files_dir: Path, now: float, retention: float) -> int:
    """Delete the files of expired conversions and forget old idempotent replies."""
    with engine.connect() as conn:
        expired = [
            row.id
            for row in conn.execute(
                select(conversions.c.id).where(
                    conversions.c.expires_at <= now, conversions.c.deleted.is_(False)
                )
            )
        ]
    for conversion_id in expired:
        file_path(files_dir, conversion_id).unlink(missing_ok=True)
    with engine.begin() as conn:
        if expired:
            conn.execute(
                update(conversions)
                .where(conversions.c.id.in_(expired))
                .values(deleted=True, result=None)
            )
        conn.execute(delete(idempotency).where(idempotency.c.created_at <= now - retention))
    return len(expired)
