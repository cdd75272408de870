"""A full disk under the data dir or the database: a 503 for the caller, a line for the operator.

The caller can't fix it and its file is not at fault, so the answer is neither a 500 nor a
415: 503 ``service_unavailable`` with ``Retry-After``; the same request succeeds once the
operator has freed space, without a restart. The operator's log line names where the
write failed.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
from pathlib import Path

from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.logs import log

#: ``errno`` values of a write that found no room: no space, or over the disk quota.
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: SQLite's "database or disk is full".
SQLITE_FULL = 13
#: PostgreSQL's SQLSTATE ``disk_full``.
POSTGRES_DISK_FULL = "53100"
#: Seconds a caller waits before sending it again: freeing space takes a person.
RETRY_AFTER_S = 60
#: What the caller is told (a PDF child sends it too, as its failure's message).
MESSAGE = (
    "The server is out of storage space, so the request could not be completed; nothing "
    f"was billed. Its operator must free space (the server logs where); send the request "
    f"again in {RETRY_AFTER_S} s or later."
)
#: The operator's log line.
LOG_MESSAGE = "disk full: requests that write fail with 503 until space is freed"


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a write that found no room: ENOSPC or EDQUOT from the system, or
    the database's own "disk full" (SQLite's ``SQLITE_FULL``, PostgreSQL's 53100), also as
    the ``orig`` of a SQLAlchemy error."""
    for error in (exc, getattr(exc, "orig", None)):
        if isinstance(error, OSError) and error.errno in FULL_ERRNOS:
            return True
        if isinstance(error, sqlite3.Error) and (
            getattr(error, "sqlite_errorcode", None) == SQLITE_FULL
            or "database or disk is full" in str(error)
        ):
            return True
        if getattr(error, "sqlstate", None) == POSTGRES_DISK_FULL:
            return True
    return False


def out_of_space(where: Path | str) -> ApiError:
    """Log that the disk holding ``where`` is full, and return the caller's 503."""
    log(logging.ERROR, LOG_MESSAGE, path=str(where))
    return ApiError("service_unavailable", MESSAGE, headers={"Retry-After": str(RETRY_AFTER_S)})
