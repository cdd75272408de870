"""Files the engine publishes: written whole under a temporary name, then renamed, with the
mode a new file gets.

A reader never sees half a file: each is written (or built) beside its target under a
hidden temporary name and renamed into place once whole. Once published it has the mode a
plain ``open(path, "wb")`` would give it (0o666 less the umask), so every output in a folder
is as readable as the others; only a file built in pieces stays private (0600) meanwhile.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: How every temporary name here ends; each also starts with a dot (hidden).
TEMP_SUFFIX = ".tmp"


def is_temporary(name: str) -> bool:
    """A name this module gives a file while it is written: what a writer killed mid-write
    (``kill -9``, a lost host) leaves behind, never a finished output."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def write_atomic(path: Path, data: bytes, *, private: bool = False) -> Path:
    """Write ``data`` to ``path`` through a temporary file, so no partial file is left; the
    file gets the mode a plain ``open(path, "wb")`` would (see ``create_temp``), or with
    ``private`` 0600 whatever the umask, from the first byte to the rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o600 if private else 0o666
    handle, temp = create_temp(path.parent, f".{path.name}.", TEMP_SUFFIX, mode)
    try:
        with os.fdopen(handle, "wb") as out:
            if private:
                os.fchmod(out.fileno(), 0o600)  # the umask may have taken the owner's bits
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def create_temp(
    folder: str | os.PathLike[str] | None, prefix: str, suffix: str, mode: int = 0o666
) -> tuple[int, str]:
    """``tempfile.mkstemp``, but the file gets the mode ``open(path, "wb")`` would give it
    (``mode``, 0o666 by default, less the umask, applied by the kernel), not 0600: a file
    renamed from it into place is then as readable as one written there directly."""
    folder = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        temp = folder / f"{prefix}{os.urandom(6).hex()}{suffix}"
        try:
            return os.open(temp, flags, mode), str(temp)
        except FileExistsError:
            continue
    raise FileExistsError(f"No free temporary file name in {folder}")


def private_temp(folder: str | os.PathLike[str] | None, prefix: str, suffix: str) -> Path:
    """An empty file only its owner can read (``mkstemp`` makes it 0600), for a file built
    in pieces: no one reads it before it is whole. ``set_new_file_mode`` opens it up then."""
    handle, temp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)
    os.close(handle)
    return Path(temp)


def set_new_file_mode(path: Path) -> None:
    """Give a finished private file the mode ``new_file_mode`` says, before it is published."""
    os.chmod(path, new_file_mode())


def publish(path: Path, target: Path) -> Path:
    """Rename the finished file ``path`` to ``target`` (its folder made if need be): one
    rename, so ``target`` is never seen half written. ``path`` must be on the same file
    system (build it beside its target)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)
    return target


def new_file_mode() -> int:
    """The mode ``open(path, "wb")`` gives a new file: 0o666 less the umask. A file built
    private (``mkstemp`` makes it 0600) takes this mode when it is published, so that once
    it is whole it is as readable as every other output beside it."""
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where the system tells it (setting it,
    even for a moment, races with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)  # private meanwhile: a file another thread creates now is 0600
    os.umask(mask)
    return mask
