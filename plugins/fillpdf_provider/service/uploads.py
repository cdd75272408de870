"""Multipart uploads streamed to disk with a hard size cap.

The file part goes straight into a temporary file under the data dir as it arrives; the
request is refused as soon as it passes the limit, so an oversized or endless upload never
fills memory or disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect

from fillpdf_provider.service.body_deadline import body_ended
from fillpdf_provider.service.disk_full import is_disk_full, out_of_space
from fillpdf_provider.service.errors import ApiError

MAX_TEXT_FIELD = 1024
MAX_PARTS = 16
#: Small text parts taken besides those with their own limit: POST /v1/convert's ``detect``.
DEFAULT_TEXT_FIELDS = ("detect",)
#: A PDF's ``%PDF-`` header must start within its first this many bytes.
PDF_MAGIC_WINDOW = 1024


def has_pdf_header(data: bytes) -> bool:
    """Whether ``data`` (a file's first bytes, or all of them) starts like a PDF."""
    return b"%PDF-" in data[:PDF_MAGIC_WINDOW]


@dataclass
class Upload:
    """The parsed form: small text fields, and the file saved at ``path``."""

    fields: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    filename: str | None = None
    size: int = 0
    sha256: str = ""

    def discard(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


class _Receiver:
    def __init__(
        self,
        folder: Path,
        file_field: str,
        max_file: int,
        text_limits: Mapping[str, int],
        prefix: str = "upload-",
        accepted: Collection[str] = (),
    ) -> None:
        self.folder = folder
        self.prefix = prefix
        self.accepted = tuple(accepted) or (file_field, *text_limits)
        self.file_field = file_field
        self.max_file = max_file
        self.text_limits = text_limits
        self.upload = Upload()
        self.parts = 0
        self._header_field = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._name: str | None = None
        self._text = bytearray()
        self._out: BinaryIO | None = None
        self._hash = hashlib.sha256()

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self.part_begin,
            "on_header_field": self.header_field,
            "on_header_value": self.header_value,
            "on_header_end": self.header_end,
            "on_headers_finished": self.headers_finished,
            "on_part_data": self.part_data,
            "on_part_end": self.part_end,
        }

    def part_begin(self) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise ApiError("invalid_request", f"A request may have at most {MAX_PARTS} parts.")
        self._headers = {}
        self._name = None
        self._text = bytearray()

    def header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def header_end(self) -> None:
        self._headers[self._header_field.lower()] = self._header_value
        self._header_field = b""
        self._header_value = b""

    def headers_finished(self) -> None:
        disposition, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        if disposition != b"form-data" or b"name" not in options:
            raise ApiError("invalid_request", "Each part needs Content-Disposition: form-data.")
        self._name = options[b"name"].decode("utf-8", "replace")
        if self._name not in self.accepted:
            name = self._name if len(self._name) <= 40 else self._name[:40] + "…"
            raise ApiError(
                "invalid_request",
                f"Unexpected form part {name!r}: send the PDF in a part named "
                f"{self.file_field!r}. The parts this endpoint takes are "
                f"{', '.join(self.accepted)}.",
                param=self.file_field,  # the part the request lacks, as when it sends none
            )
        if self._name == self.file_field:
            if self.upload.path is not None:
                raise ApiError("invalid_request", "Send one file.", param=self.file_field)
            filename = options.get(b"filename")
            self.upload.filename = filename.decode("utf-8", "replace") if filename else None
            fd, temp = tempfile.mkstemp(prefix=self.prefix, suffix=".pdf", dir=self.folder)
            self.upload.path = Path(temp)
            self._out = os.fdopen(fd, "wb")

    def part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._name == self.file_field and self._out is not None:
            self.upload.size += len(chunk)
            if self.upload.size > self.max_file:
                raise _too_large(self.max_file)
            self._hash.update(chunk)
            self._out.write(chunk)
            return
        self._text += chunk
        limit = self.text_limits.get(self._name or "", MAX_TEXT_FIELD)
        if len(self._text) > limit:
            raise ApiError(
                "invalid_request",
                f"Form field {self._name!r} is over {limit:,} bytes; send less.",
                param=self._name,
            )

    def part_end(self) -> None:
        if self._name == self.file_field and self._out is not None:
            self._out.close()
            self._out = None
            self.upload.sha256 = self._hash.hexdigest()
        elif self._name is not None:
            self.upload.fields[self._name] = self._text.decode("utf-8", "replace")

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def abandon(self) -> None:
        """Close and delete the file of a request that failed; a close that fails too (its
        last bytes found no room) must not keep the file."""
        out, self._out = self._out, None
        if out is not None:
            with contextlib.suppress(OSError):
                out.close()
        self.upload.discard()


def _too_large(limit: int) -> ApiError:
    return ApiError(
        "unsupported_file",
        f"The file is larger than {limit // (1024 * 1024)} MB; split it or compress it first.",
        param="file",
    )


async def receive_upload(
    content_type: str | None,
    content_length: str | None,
    body: AsyncIterator[bytes],
    folder: Path,
    *,
    file_field: str = "file",
    max_file: int,
    text_limits: Mapping[str, int] | None = None,
    prefix: str = "upload-",
    text_fields: Collection[str] = DEFAULT_TEXT_FIELDS,
) -> Upload:
    """Parse a ``multipart/form-data`` body into ``Upload``; raises ``ApiError`` on bad input.

    Text parts are kept in memory: each is capped at ``MAX_TEXT_FIELD`` bytes, or at its
    limit in ``text_limits``. The file's temporary name starts with ``prefix`` (the service
    puts its instance id there, so the uploads of a server that died can be told apart).
    The parts taken are ``file_field``, ``text_fields`` and those of ``text_limits``; any
    other part is refused with a 400 that names the ones taken (a PDF sent as ``pdf`` is a
    mistake to point out, not a text field to cap).
    """
    text_limits = dict(text_limits or {})
    accepted = list(dict.fromkeys([file_field, *text_fields, *text_limits]))
    kind, options = parse_options_header(content_type or "")
    if kind != b"multipart/form-data" or not options.get(b"boundary"):
        raise ApiError(
            "invalid_request",
            "Send the PDF as multipart/form-data with a part named 'file'.",
            param=file_field,
        )
    overhead = 64 * 1024 + sum(text_limits.values())
    if content_length and content_length.isdigit() and int(content_length) > max_file + overhead:
        raise _too_large(max_file)
    receiver = _Receiver(folder, file_field, max_file, text_limits, prefix, accepted)
    parser = MultipartParser(options[b"boundary"], receiver.callbacks())  # type: ignore[arg-type]
    received = 0
    try:
        async for chunk in body:
            received += len(chunk)
            if received > max_file + overhead:
                raise _too_large(max_file)
            parser.write(chunk)
        parser.finalize()
    except ApiError:  # also a body too slow (408), from the receive it reads through
        receiver.abandon()
        raise
    except ClientDisconnect:
        receiver.abandon()
        raise body_ended() from None
    except Exception as exc:  # a full disk, else the multipart parser's own errors
        receiver.abandon()
        if is_disk_full(exc):
            raise out_of_space(folder) from None
        raise ApiError(
            "invalid_request",
            "The multipart body is malformed: its parts do not follow the boundary its "
            "Content-Type names. Let the HTTP client build it (curl -F file=@form.pdf).",
        ) from None
    receiver.close()
    if receiver.upload.path is not None and receiver.upload.sha256 == "":
        receiver.upload.discard()
        raise ApiError("invalid_request", "The multipart body ended inside the file part.")
    return receiver.upload
