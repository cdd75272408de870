"""The service's notion of "now", which tests can move forward.

Quota periods, 24-hour retention, signed-URL expiry and rate-limit windows all hang on the
clock. A real server runs on the system clock; a test server started with
``FILLPDF_CLOCK_FILE`` adds the number of seconds written in that file, so a test can step
past midnight on the 1st or past 24 hours without waiting, while the server stays a real
process.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path


class Clock:
    """Seconds since the epoch (UTC), optionally shifted by an offset read from a file."""

    def __init__(self, offset_file: str | os.PathLike[str] | None = None) -> None:
        self.offset_file = Path(offset_file) if offset_file else None

    def offset(self) -> float:
        if self.offset_file is None:
            return 0.0
        try:
            text = self.offset_file.read_text().strip()
        except FileNotFoundError:
            return 0.0
        return float(text) if text else 0.0

    def now(self) -> float:
        return time.time() + self.offset()

    def utcnow(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.now(), dt.UTC)


def iso(epoch: float) -> str:
    """ISO 8601 in UTC with a ``Z``, to the second: what the API returns for timestamps."""
    return dt.datetime.fromtimestamp(int(epoch), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def month_bounds(epoch: float) -> tuple[dt.datetime, dt.datetime]:
    """The calendar month (UTC) holding ``epoch``: its first instant and the next month's."""
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, end


def period_of(epoch: float) -> str:
    """The quota period key, ``YYYY-MM`` in UTC."""
    return month_bounds(epoch)[0].strftime("%Y-%m")
