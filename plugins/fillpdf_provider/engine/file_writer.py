"""A batch's files written by a process of its own, beside the process that fills them.

Creating and writing a file costs ext4 tens of microseconds of kernel time, and ten times
that for the first thousands of files after gigabytes were deleted
(``benchmarks/results/file_create.txt``). On a thread that time is off the GIL, but each
return from the kernel takes the GIL back from the filling thread. A second process shares
no lock with the filling one: each file goes down a pipe (one copy), the writer publishes it
whole (``files.write_atomic``) and sends back its sha256, in the order the files came.
With a core to spare a batch fills a fifth or more rows per second this way; where every
core already fills, the two are about even (``benchmarks/worker_scaling.py``).

What a crash leaves: a writer killed mid-file leaves no file where Linux writes it unnamed
(elsewhere a hidden temporary name, which a merge clears); a filling process killed, or
stopped by a signal, leaves the writer to write the files already sent to it (at most
``ahead + 1``), each whole, and end at the end of its pipe: it ignores SIGINT and SIGTERM.
A file sent but not yet answered for is never in the manifest: the rerun writes it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import signal
import struct
import subprocess
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

from fillpdf_provider.engine.files import write_atomic
from fillpdf_provider.engine.in_order import InTurn

T = TypeVar("T")
#: Before each file: the length of its name and of its bytes.
FILE_HEADER = struct.Struct("<II")
#: Before each answer: 0 and a sha256 digest's length, or an errno (-1: not an OSError) and
#: the length of the error's text.
ANSWER_HEADER = struct.Struct("<iI")
#: The writer's first answer once it has started: a batch waits for it before sending files.
READY = b"fillpdf-writer-ready\n"
STOPPING_SECONDS = 10.0  # how long a writer whose pipes broke is given to end, for its status
MAX_ERROR_TEXT = 1000  # bytes of an error's text sent back
#: What the answers a batch has not read yet (at most ``ahead + 1``) may take: the pipe they
#: wait in must hold them all, or the writer and the batch could each wait on the other.
ANSWER_ROOM = ANSWER_HEADER.size + MAX_ERROR_TEXT
START_SECONDS = 30.0  # how long a writer is given to say it is ready
#: The outcome of a file: its sha256 (hex), or why it could not be written.
Outcome = str | Exception
_SERVE = (
    "import sys; sys.path.append(sys.argv[1]); "
    "from fillpdf_provider.engine.file_writer import serve; sys.exit(serve(sys.argv[2]))"
)


class FileWriterStopped(OSError):
    """The writer process ended before answering for every file: those files are not in the
    manifest, and a run again writes them."""


#: The writers open in this process, whose pipes a child forked from it lets go of.
_OPEN: weakref.WeakSet[FileWriter[Any]] = weakref.WeakSet()


def _let_go_in_child() -> None:
    """In a child forked without exec (multiprocessing's fork, a bare ``os.fork``), point
    each writer's pipe ends at /dev/null: a child that held the writer's input open would
    keep the writer from ever seeing its end, and the batch waiting for it."""
    if not _OPEN:
        return
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for writer in list(_OPEN):
            for stream in (writer._to, writer._from):
                with contextlib.suppress(OSError, ValueError):
                    os.dup2(null, stream.fileno())
        _OPEN.clear()
    finally:
        os.close(null)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_let_go_in_child)


class FileWriter(InTurn[T]):
    """Writes files into ``folder`` in a process of its own, at most ``ahead`` unanswered,
    and gives back each file's result (``done(outcome)``) in the order the files were put."""

    def __init__(self, process: subprocess.Popen[bytes], ahead: int) -> None:
        assert process.stdin is not None and process.stdout is not None
        super().__init__(ahead)
        self.process = process
        self._to: IO[bytes] = process.stdin
        self._from: IO[bytes] = process.stdout
        self.answered = 0
        _OPEN.add(self)

    @classmethod
    def start(cls, folder: Path, ahead: int) -> FileWriter[T] | None:
        """A writer for ``folder``, or None where none can run (no Python executable that
        answers, a system that refuses, answers that would not fit in a pipe): the caller
        writes the files itself."""
        if not sys.executable:
            return None
        package_root = Path(__file__).resolve().parents[2]
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _SERVE, str(package_root), str(folder)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
            )
        except (OSError, ValueError):
            return None
        try:
            if _answers_fit(process, ahead) and _says_ready(process):
                return cls(process, ahead)
        except BaseException:  # (Ctrl-C while it starts: no writer left behind)
            process.kill()
            _end(process)
            raise
        process.kill()  # (a process that is not our writer is not waited for)
        _end(process)
        return None

    def put_file(self, name: str, data: bytes, done: Callable[[Outcome], T]) -> None:
        """Send ``data`` to be published as ``name``; ``done(outcome)`` makes its result."""
        encoded = name.encode("utf-8", "surrogateescape")
        try:
            self._to.write(FILE_HEADER.pack(len(encoded), len(data)) + encoded)
            self._to.write(data)
            self._to.flush()
        except (BrokenPipeError, ValueError):
            raise self._stopped() from None
        self._waiting.append(lambda: done(self._answer()))

    def _answer(self) -> Outcome:
        head = self._from.read(ANSWER_HEADER.size)
        if len(head) < ANSWER_HEADER.size:
            raise self._stopped()
        code, size = ANSWER_HEADER.unpack(head)
        payload = self._from.read(size)
        if len(payload) < size:
            raise self._stopped()
        self.answered += 1
        if code == 0:
            return payload.hex()
        text = payload.decode("utf-8", "replace")
        if code < 0:
            return ValueError(text)
        error = OSError(text)  # (its text is the writer's, errno and all, as the thread's)
        error.errno = code
        return error

    def _stopped(self) -> FileWriterStopped:
        """The error for a writer whose pipes broke: it has ended, or is ending."""
        try:
            how = f"ended with status {self.process.wait(STOPPING_SECONDS)}"
        except subprocess.TimeoutExpired:
            how = "is not answering"
        return FileWriterStopped(
            f"The process writing this batch's files {how} after {self.answered} files; "
            "the rows after them are not in a manifest. Run the batch again: it writes them."
        )

    def close(self) -> None:
        """Let the writer finish the files already sent (none is cut) and wait for it."""
        super().close()
        _OPEN.discard(self)
        _end(self.process)


def _answers_fit(process: subprocess.Popen[bytes], ahead: int) -> bool:
    """Whether the pipe of answers holds every answer a batch may leave unread (grown to
    that where Linux allows); where its size cannot be told, no."""
    assert process.stdout is not None
    try:
        import fcntl
    except ImportError:  # (Windows: the thread writes there)
        return False
    get_size = getattr(fcntl, "F_GETPIPE_SZ", None)
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if get_size is None or set_size is None:  # (not Linux)
        return False
    needed = (ahead + 1) * ANSWER_ROOM
    handle = process.stdout.fileno()
    try:
        if fcntl.fcntl(handle, get_size) < needed:
            fcntl.fcntl(handle, set_size, needed)
        return bool(fcntl.fcntl(handle, get_size) >= needed)
    except OSError:  # (past the user's pipe quota)
        return False


def _says_ready(process: subprocess.Popen[bytes]) -> bool:
    """Whether the process started is a writer: it says so within ``START_SECONDS``."""
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], START_SECONDS)
    return bool(readable) and process.stdout.read(len(READY)) == READY


def _end(process: subprocess.Popen[bytes]) -> None:
    """Close the writer's input (it stops after the file it is on) and wait for it."""
    for stream in (process.stdin, process.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:  # (a broken pipe on the last flush: the writer is gone already)
            pass
    process.wait()


def serve(folder: str) -> int:
    """The writer's loop: each file read from standard input is published in ``folder``,
    and its sha256 (or why not) written to standard output. It ends at the end of its input,
    a file cut short (the filling process died) left unwritten."""
    for stopping in (signal.SIGINT, signal.SIGTERM):  # the batch stops: its pipe ends this
        signal.signal(stopping, signal.SIG_IGN)
    source, answers, root = sys.stdin.buffer, sys.stdout.buffer, Path(folder)
    try:
        answers.write(READY)
        answers.flush()
        while _serve_one(source, answers, root):
            pass
    except BrokenPipeError:  # the filling process is gone: its manifest lists none of these
        os.dup2(os.open(os.devnull, os.O_WRONLY), answers.fileno())  # (no error at exit)
    return 0


def _serve_one(source: IO[bytes], answers: IO[bytes], root: Path) -> bool:
    """Write the next file and answer for it; False at the end of the input."""
    head = source.read(FILE_HEADER.size)
    if len(head) < FILE_HEADER.size:
        return False
    name_size, data_size = FILE_HEADER.unpack(head)
    name, data = source.read(name_size), source.read(data_size)
    if len(name) < name_size or len(data) < data_size:
        return False
    try:
        write_atomic(root / name.decode("utf-8", "surrogateescape"), data)
    except Exception as exc:  # a bad row, as on the thread, never the end of the batch
        code = (exc.errno or -1) if isinstance(exc, OSError) else -1
        text = str(exc).encode("utf-8", "replace")[:MAX_ERROR_TEXT]
        answers.write(ANSWER_HEADER.pack(code, len(text)) + text)
    else:
        digest = hashlib.sha256(data).digest()
        answers.write(ANSWER_HEADER.pack(0, len(digest)) + digest)
    answers.flush()
    return True
