"""Untrusted PDFs are read in a separate, limited process that can be killed.

A crafted PDF can make any PDF library loop, recurse or allocate without end. The service
therefore opens uploads (and fills PDFs a caller sends inline) in a child process forked
from a small preloaded server (``forkserver``), with an address-space limit and a deadline.
If the child hangs it is killed; if it dies, the request gets a 502 and the service keeps
serving. Filling a conversion the service wrote itself stays in-process, where it is fast.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import resource
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

PRELOAD = ["fillpdf_provider.engine.convert", "fillpdf_provider.engine.filler"]

_context_lock = threading.Lock()
_context: Any = None


@dataclass
class EngineFailure(Exception):
    """The engine refused the input (a typed error) or could not finish with it."""

    error_type: str
    message: str
    param: str | None = None

    def __str__(self) -> str:
        return self.message


def _ctx() -> Any:
    global _context
    with _context_lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            _context = context
        return _context


def warm_up() -> None:
    """Start the fork server now, so the first request doesn't pay for its imports."""
    run_fill(b"", {}, flatten=False, timeout=60, memory_bytes=0, warm=True)


def _limit(memory_bytes: int, cpu_seconds: float) -> None:
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    soft = int(cpu_seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))


def _failure(exc: BaseException) -> tuple[str, str, str, str | None]:
    from fillpdf_provider.engine.errors import FillPdfError

    if isinstance(exc, FillPdfError):
        return ("error", exc.error_type, exc.message, exc.param)
    if isinstance(exc, MemoryError):
        return ("error", "engine_error", "The PDF needs more memory than the service allows.", None)
    if isinstance(exc, RecursionError):
        return ("error", "engine_error", "The PDF's objects are nested too deeply to read.", None)
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:200]
    return ("error", "engine_error", f"The PDF could not be processed ({detail}).", None)


def _convert_child(
    conn: Connection,
    upload: str,
    detect: str,
    output: str,
    memory: int,
    cpu: float,
    schema: str | None = None,
) -> None:
    try:
        _limit(memory, cpu)
        from fillpdf_provider.engine.convert import convert
        from fillpdf_provider.engine.filler import write_atomic
        from fillpdf_provider.engine.rebuild import check_placement, parse_schema
        from fillpdf_provider.engine.source import open_pdf, reading_pdf

        data = Path(upload).read_bytes()
        opened = open_pdf(data)
        pages = len(opened.reader.pages)
        if pages == 0:
            conn.send(("error", "unsupported_file", "The PDF has no pages.", "file"))
            return
        if schema is not None:  # a schema that doesn't fit the PDF is refused before billing
            with reading_pdf():
                check_placement(parse_schema(schema), opened.reader)
        conn.send(("pages", pages))
        if conn.recv() != "go":
            return
        result = convert(data, detect, max_pages=max(pages, 1), schema=schema)
        write_atomic(Path(output), result.pdf)
        conn.send(("done", result.to_dict()))
    except EOFError:
        return
    except BaseException as exc:  # everything goes back to the parent as a typed failure
        with contextlib.suppress(Exception):
            conn.send(_failure(exc))
    finally:
        conn.close()


def _fill_child(
    conn: Connection, pdf: bytes, values: dict[str, Any], flatten: bool, memory: int, cpu: float
) -> None:
    try:
        _limit(memory, cpu)
        from fillpdf_provider.engine.filler import Template

        if not pdf:  # warm-up
            conn.send(("done", b""))
            return
        conn.send(("done", Template(pdf).fill(values, flatten=flatten)))
    except BaseException as exc:
        with contextlib.suppress(Exception):
            conn.send(_failure(exc))
    finally:
        conn.close()


def _receive(conn: Connection, process: Any, timeout: float, what: str) -> tuple[Any, ...]:
    if not conn.poll(timeout):
        raise EngineFailure(
            "engine_error",
            f"{what} took longer than {timeout:g} s and was stopped; the file may be damaged "
            "or built to exhaust PDF readers.",
        )
    try:
        message = conn.recv()
    except (EOFError, OSError):
        process.join(1)
        code = process.exitcode
        raise EngineFailure(
            "engine_error",
            f"{what} stopped the PDF reader (exit {code}); the file may be damaged.",
        ) from None
    if message[0] == "error":
        raise EngineFailure(message[1], message[2], message[3])
    return tuple(message)


def _stop(process: Any, conn: Connection) -> None:
    conn.close()
    if process.is_alive():
        process.kill()
    process.join(5)


def run_convert(
    upload: Path,
    detect: str,
    output: Path,
    *,
    decide: Callable[[int], None],
    probe_timeout: float,
    timeout: float,
    memory_bytes: int,
    schema: str | None = None,
) -> dict[str, Any]:
    """Convert ``upload`` into ``output`` in a child process; returns the result dict.

    ``decide(pages)`` runs in this process once the page count is known and before any
    detection; it raises to refuse the work (plan limits, quota), and the child is stopped.
    With ``schema`` (JSON text) the form is built from it instead of detected; its pages
    and rects are checked against the PDF before ``decide`` is asked.
    """
    ctx = _ctx()
    parent, child = ctx.Pipe()
    cpu = probe_timeout + timeout
    process = ctx.Process(
        target=_convert_child,
        args=(child, str(upload), detect, str(output), memory_bytes, cpu, schema),
        daemon=True,
    )
    process.start()
    child.close()
    try:
        _, pages = _receive(parent, process, probe_timeout, "Opening the PDF")
        decide(int(pages))
        parent.send("go")
        return _receive(parent, process, timeout, "Converting the PDF")[1]
    finally:
        _stop(process, parent)


def run_fill(
    pdf: bytes,
    values: Mapping[str, Any],
    *,
    flatten: bool,
    timeout: float,
    memory_bytes: int,
    warm: bool = False,
) -> bytes:
    """Fill an untrusted ``pdf`` in a child process; returns the filled PDF."""
    ctx = _ctx()
    parent, child = ctx.Pipe()
    process = ctx.Process(
        target=_fill_child,
        args=(child, pdf, dict(values), flatten, memory_bytes, timeout),
        daemon=True,
    )
    process.start()
    child.close()
    try:
        message = _receive(parent, process, timeout, "Filling the PDF")
        return b"" if warm else message[1]
    finally:
        _stop(process, parent)
