"""The child side of PDF work: what runs in a separate, limited process that can be killed.

A crafted PDF can make any PDF library loop, recurse or allocate without end, and even a
form the service wrote itself can be handed a value that takes long to lay out. All PDF
work therefore runs in child processes forked from a small preloaded server
(``forkserver``), with an address-space limit, and dies with that server: a child never
outlives the service. ``engine_pool`` is the parent side: how many children run at once,
their deadlines, and the queue in front of them.

Two kinds of child, each used once:

- a convert child per upload: it opens the file, reports the page count, waits for the
  parent's "go" (the parent reserves the pages in between), then converts;
- a fill child per PDF sent inline (untrusted).

A stored conversion is the service's own output, so its fills run in the server process
(``templates``), bounded before any drawing.
"""

from __future__ import annotations

import logging
import resource
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fillpdf_provider.service import parent_death

#: Imported by the fork server as it starts: the guard first, so it dies with the service.
PRELOAD = [
    "fillpdf_provider.service.fork_server_guard",
    "fillpdf_provider.engine.convert",
    "fillpdf_provider.engine.filler",
]

Failure = tuple[str, str, str, str | None]


@dataclass
class EngineFailure(Exception):
    """The engine refused the input (a typed error) or could not finish with it."""

    error_type: str
    message: str
    param: str | None = None

    def __str__(self) -> str:
        return self.message


def die_with_fork_server() -> None:
    """``die_with_parent`` for a child of the fork server, checked against its pid."""
    from fillpdf_provider.service import fork_server_guard

    parent_death.die_with_parent(fork_server_guard.fork_server_pid)


def limit(memory_bytes: int, cpu_seconds: float | None) -> None:
    """Cap the address space and, for a one-shot child, the CPU time."""
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if cpu_seconds is not None:
        soft = int(cpu_seconds) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))


def failure_of(exc: BaseException) -> Failure:
    """What the caller is told of an engine failure: a typed error and a message, no
    internals (a child sends it to the parent; a fill in the server raises it)."""
    from fillpdf_provider.engine.errors import FillPdfError, UnknownFieldError
    from fillpdf_provider.service import disk_full

    if disk_full.is_disk_full(exc):  # the output found no room: the server's, not the file's
        return ("error", "service_unavailable", disk_full.MESSAGE, None)
    if isinstance(exc, UnknownFieldError) and not exc.suggestions:
        return (
            "error",
            exc.error_type,
            f"The form has no field named {exc.name!r}; GET /v1/conversions/{{id}} lists "
            "the schema's names.",
            exc.param,
        )
    if isinstance(exc, FillPdfError):
        return ("error", exc.error_type, exc.message, exc.param)
    if isinstance(exc, MemoryError):
        return (
            "error",
            "unsupported_file",
            "The PDF needs more memory than the service allows; split it into smaller files "
            "or re-save it with a PDF editor.",
            None,
        )
    if isinstance(exc, RecursionError):
        return (
            "error",
            "unsupported_file",
            "The PDF's objects are nested too deeply to read; re-save it with a PDF editor.",
            None,
        )
    logging.getLogger("fillpdf.engine").error("engine failure", exc_info=exc)
    return (
        "error",
        "engine_error",
        "The engine failed on this PDF; the failure is logged. Re-saving the file with a PDF "
        "editor may avoid it.",
        None,
    )


def _send_failure(conn: Connection, exc: BaseException) -> None:
    try:
        conn.send(failure_of(exc))
    except Exception:  # the parent is gone, or stopped listening: nobody to tell but the log
        logging.getLogger("fillpdf.engine").warning("could not report a failure", exc_info=exc)


def convert_child(
    conn: Connection,
    upload: str,
    detect: str,
    output: str,
    memory: int,
    cpu: float,
    max_fields: int,
    schema: str | None = None,
) -> None:
    """Open ``upload``, report its pages, and convert it into ``output`` once told to go."""
    try:
        die_with_fork_server()
        limit(memory, cpu)
        from fillpdf_provider.engine.convert import convert
        from fillpdf_provider.engine.files import write_atomic
        from fillpdf_provider.engine.form import check_form_size
        from fillpdf_provider.engine.rebuild import check_placement, parse_schema
        from fillpdf_provider.engine.source import open_pdf, reading_pdf

        data = Path(upload).read_bytes()
        opened = open_pdf(data)
        pages = len(opened.reader.pages)
        if pages == 0:
            conn.send(("error", "unsupported_file", "The PDF has no pages.", "file"))
            return
        with reading_pdf():
            check_form_size(opened.reader, max_fields)
        if schema is not None:  # a schema that doesn't fit the PDF is refused before billing
            with reading_pdf():
                check_placement(parse_schema(schema), opened.reader)
        conn.send(("pages", pages))
        if conn.recv() != "go":
            return
        result = convert(data, detect, max_pages=max(pages, 1), schema=schema)
        write_atomic(Path(output), result.pdf, private=True)  # as the data folder is
        conn.send(("done", result.to_dict()))
    except EOFError:
        return
    except BaseException as exc:  # everything goes back to the parent as a typed failure
        _send_failure(conn, exc)
    finally:
        conn.close()


def fill_child(
    conn: Connection,
    pdf: bytes,
    values: dict[str, Any],
    flatten: bool,
    memory: int,
    cpu: float,
    max_fields: int,
) -> None:
    """Fill a PDF the caller sent inline; the process is used once."""
    try:
        die_with_fork_server()
        limit(memory, cpu)
        from fillpdf_provider.engine.filler import Template

        template = Template(pdf, max_fields=max_fields)
        conn.send(("done", template.fill(values, flatten=flatten)))
    except BaseException as exc:
        _send_failure(conn, exc)
    finally:
        conn.close()


def ready_child(conn: Connection, memory: int) -> None:
    """Set the limits a child works under, load the engine and say so: the check, at the
    server's start, that children can start at all."""
    try:
        die_with_fork_server()
        limit(memory, None)
        from fillpdf_provider.engine import filler  # noqa: F401  (what a fill child loads)
    except Exception as exc:  # no file read: the server's set-up, for its operator
        conn.send(("start_failed", f"{type(exc).__name__}: {exc}"))
    else:
        conn.send(("ready",))
    finally:
        conn.close()
