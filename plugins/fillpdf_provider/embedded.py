"""The API's calls on the local engine: no server, no key, no limits.

``FillPdfHook`` uses this when its connection names no host. Conversions are kept for 24
hours, like the service keeps them, so ``fill(conversion_id, ...)`` works the same way in both
modes; errors are the client's exception classes, so callers catch one set. The store is a
local folder by default; on workers that share no disk it is an object-storage URI (the
connection's ``conversions_uri``), so a conversion made on one worker fills on another.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fillpdf_provider.account import Account
from fillpdf_provider.client import (
    ConversionRef,
    FillPdfApiError,
    NotFound,
    PdfSource,
    SchemaSource,
    ServiceUnavailable,
    error_for,
    schema_text,
)
from fillpdf_provider.engine.convert import ConversionResult, convert
from fillpdf_provider.engine.errors import FillPdfError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.engine.source import read_bytes
from fillpdf_provider.storage import Store

RETENTION_S = 24 * 3600
PROBE_NAME = ".fillpdf-store-check"
#: Where reviews of a store's conversions are saved: outside the retention sweep (a reviewed
#: schema is the input of the next conversion, and is kept until someone removes it).
REVIEWED_FOLDER = "reviewed"
#: Longest conversion id taken (``conv_`` and 24 hex digits are made): a longer one never
#: reaches the store.
MAX_CONVERSION_ID = 64
#: A conversion id: ``conv_`` and ASCII letters and digits only (``str.isalnum`` would let
#: other scripts' letters and digits through to the store's file names).
CONVERSION_ID = re.compile(rf"conv_[A-Za-z0-9]{{1,{MAX_CONVERSION_ID - 5}}}")


def default_store() -> Path:
    """``$FILLPDF_EMBEDDED_STORE``, else ``$AIRFLOW_HOME/fillpdf/conversions``, else
    ``~/.cache/fillpdf/conversions`` (outside Airflow: conversions kept a day are a cache,
    and belong in the user's cache folder). README.md's ``conversions_uri`` row says the
    same; tests/project/test_readme.py holds the two together."""
    if os.environ.get("FILLPDF_EMBEDDED_STORE"):
        return Path(os.environ["FILLPDF_EMBEDDED_STORE"])
    if os.environ.get("AIRFLOW_HOME"):
        return Path(os.environ["AIRFLOW_HOME"]) / "fillpdf" / "conversions"
    return Path.home() / ".cache" / "fillpdf" / "conversions"


def _api_error(exc: FillPdfError, pdf: object = None) -> Exception:
    """The client's exception for an engine error, naming the file when it came as a path
    (among a folder of inputs, "the file is not a PDF" leaves the reader to find which)."""
    message = exc.message
    if isinstance(pdf, str | os.PathLike):
        name = repr(os.fspath(pdf))
        if name not in message:
            message = f"{name}: {message}"
    return error_for(exc.error_type, message, param=exc.param)


class EmbeddedFillPdf:
    """Convert and fill in this process, with a store of conversions (a folder or a URI)."""

    remote = False
    """No service: every call runs here (the client's is True)."""
    has_quota = False
    """No plan and no limits: nothing is billed (the client's is True)."""

    def __init__(
        self, store: str | os.PathLike[str] | None = None, conn_id: str | None = None
    ) -> None:
        self.location = str(store) if store else str(default_store())
        self.store = Store(self.location, conn_id)

    def close(self) -> None:
        """Nothing to release: no connection is held between calls (the client holds one)."""

    @contextlib.contextmanager
    def _reaching_store(
        self, doing: str, passing: tuple[type[Exception], ...] = ()
    ) -> Iterator[None]:
        """A store that can't be reached or written is named, with the setting to change
        (its own error says only what the file system or the object store refused);
        ``passing`` are the errors the caller handles itself."""
        handled: tuple[type[Exception], ...] = (FillPdfApiError, *passing)
        try:
            yield
        except handled:
            raise
        except Exception as exc:
            raise ServiceUnavailable(
                f"The embedded conversions store {self.location!r} can't be {doing} "
                f"({type(exc).__name__}: {exc}). Set the connection's conversions_uri (or "
                "$FILLPDF_EMBEDDED_STORE) to a folder or URI every worker can write, e.g. "
                "s3://bucket/fillpdf-conversions.",
                param="conversions_uri",
            ) from None

    def check(self) -> None:
        """Write, read and remove a small file: what a conversion will need of the store."""
        with self._reaching_store("written"):
            self.store.write(PROBE_NAME, b"ok")
            self.store.read_bytes(PROBE_NAME)
            self.store.remove(PROBE_NAME)

    def _names(self, conversion_id: str) -> tuple[str, str]:
        if not CONVERSION_ID.fullmatch(conversion_id):
            shown = conversion_id if len(conversion_id) <= 40 else conversion_id[:37] + "..."
            raise NotFound(
                f"No conversion {shown!r}: a conversion id is conv_ and ASCII letters and "
                f"digits, at most {MAX_CONVERSION_ID} characters.",
                param="conversion_id",
            )
        return f"{conversion_id}.pdf", f"{conversion_id}.json"

    def convert(
        self, pdf: PdfSource, *, detect: str = "fields", schema: SchemaSource | None = None
    ) -> ConversionResult:
        text = schema_text(schema) if schema is not None else None
        try:
            data = read_bytes(pdf)
            result = convert(data, detect, schema=text)
        except FillPdfError as exc:
            raise _api_error(exc, pdf) from None
        # The schema as the API returns it (rects to 3 decimals): the same in both modes.
        result.schema = [Field.from_dict(entry.to_dict()) for entry in result.schema]
        how = detect.encode() if text is None else b"schema\0" + text.encode()
        digest = hashlib.sha256(how + b"\0" + data).hexdigest()
        result.conversion_id = f"conv_{digest[:24]}"
        pdf_name, meta_name = self._names(result.conversion_id)
        with self._reaching_store("written"):
            self.store.write(pdf_name, result.pdf)  # the PDF first: the metadata marks it done
            meta = {**result.to_dict(), "created_at": time.time()}
            local = self.store.local
            url = (local / pdf_name).resolve().as_uri() if local else self.store.uri(pdf_name)
            meta["document_url"] = result.document_url = url
            self.store.write(meta_name, json.dumps(meta).encode())
            self._sweep()
        return result

    def get_conversion(self, conversion_id: str) -> ConversionResult:
        pdf_name, meta_name = self._names(conversion_id)
        try:
            with self._reaching_store("read", passing=(FileNotFoundError,)):
                meta = json.loads(self.store.read_bytes(meta_name))
                pdf = self.store.read_bytes(pdf_name)
        except FileNotFoundError:
            raise NotFound(
                f"No conversion {conversion_id!r} in {self.location}; convert the PDF first "
                "(conversions are kept 24 hours). Workers that share no disk need a shared "
                "store: set conversions_uri on the connection (e.g. s3://bucket/conversions).",
                param="conversion_id",
            ) from None
        return ConversionResult(
            pdf=pdf,
            schema=[Field.from_dict(entry) for entry in meta["schema"]],
            pages=int(meta["pages"]),
            ms=int(meta["ms"]),
            status=meta["status"],
            conversion_id=conversion_id,
            document_url=meta.get("document_url"),
        )

    def download(self, conversion: str | ConversionRef) -> bytes:
        """The fillable PDF of a conversion: the one in hand, else the stored one."""
        if isinstance(conversion, ConversionResult):
            return conversion.pdf
        cid = conversion if isinstance(conversion, str) else conversion.conversion_id
        if cid is None:
            raise NotFound("The conversion has no id to find it by.", param="conversion_id")
        return self.get_conversion(cid).pdf

    def recent_conversions(self, limit: int = 20) -> list[dict[str, Any]]:
        """The store's conversions, newest first: id, pages, fields and when made."""
        found = [
            {
                "conversion_id": meta["_name"][: -len(".json")],
                "pages": int(meta.get("pages", 0)),
                "fields": len(meta.get("schema") or []),
                "created_at": float(meta.get("created_at", 0)),
            }
            for meta in self._metadata()
        ]
        found.sort(key=lambda m: (-m["created_at"], m["conversion_id"]))
        return found[:limit]

    def review_source(self, conversion_id: str) -> tuple[bytes, list[dict[str, Any]]]:
        """A conversion's flat PDF (the file before the form was added) and its schema."""
        from fillpdf_provider.engine.incremental import previous_revision

        conversion = self.get_conversion(conversion_id)
        flat = previous_revision(conversion.pdf)
        if flat is None:
            raise NotFound(
                f"Conversion {conversion_id!r} holds no earlier revision to review: convert "
                "the flat PDF again.",
                param="conversion_id",
            )
        return flat, [f.to_dict() for f in conversion.schema]

    def reviewed_name(self, conversion_id: str, suffix: str) -> str:
        """Where a review of ``conversion_id`` saves its schema (``.schema.json``) or the form
        built from it (``.fillable.pdf``)."""
        self._names(conversion_id)  # a well-formed id
        return f"{REVIEWED_FOLDER}/{conversion_id}{suffix}"

    def save_reviewed(self, conversion_id: str, suffix: str, data: bytes) -> str:
        """Write a review's file whole (``reviewed_name``); returns its URI, the one
        ``ConvertOperator(schema=...)`` or ``FillOperator(template=...)`` takes."""
        name = self.reviewed_name(conversion_id, suffix)
        with self._reaching_store("written"):
            self.store.write(name, data)
            self.store.flush()
        local = self.store.local
        return str((local / name).resolve()) if local else self.store.uri(name)

    def fill(
        self,
        target: str | bytes,
        values: Mapping[str, Any],
        *,
        fields: Sequence[Field | Mapping[str, Any]] | None = None,
        flatten: bool = False,
    ) -> bytes:
        pdf = self.get_conversion(target).pdf if isinstance(target, str) else bytes(target)
        try:
            return Template(pdf).fill(values, flatten=flatten)
        except FillPdfError as exc:
            raise _api_error(exc) from None

    def get_account(self) -> Account:
        """No plan and no limits; ``pages_used`` counts this month's local conversions."""
        now = dt.datetime.now(dt.UTC)
        start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        used = 0
        for meta in self._metadata():
            if meta.get("created_at", 0) >= start.timestamp():
                used += int(meta.get("pages", 0))
        return Account.of_usage(
            plan="embedded",
            pages_used=used,
            pages_included=None,
            overage_rate_usd=None,
            max_pages_per_file=None,
            rate_limit_per_minute=None,
            hard_stop=False,
            period_start=start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            period_end=None,
        )

    def _metadata(self) -> list[dict[str, Any]]:
        with self._reaching_store("listed"):
            names = self.store.names("", "conv_*.json")
        found = []
        for name in names:
            try:
                found.append({**json.loads(self.store.read_bytes(name)), "_name": name})
            except (OSError, ValueError):
                continue
        return found

    def _sweep(self) -> None:
        """Drop conversions older than the retention (by the time recorded when made)."""
        cutoff = time.time() - RETENTION_S
        for meta in self._metadata():
            if meta.get("created_at", 0) < cutoff:
                stem = meta["_name"][: -len(".json")]
                self.store.remove(f"{stem}.pdf")
                self.store.remove(meta["_name"])
