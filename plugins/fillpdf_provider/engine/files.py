"""Files the engine publishes: written whole before they get their name, with the mode a
new file gets.

A reader never sees half a file. Where Linux allows it, a file is written with no name at
all (``O_TMPFILE``) and linked into place once whole: one directory change instead of two,
and a writer killed mid-write leaves nothing behind. Elsewhere (another system, a file
system without it, a name already taken) it is written beside its target under a hidden
temporary name and renamed into place. Once published it has the mode a plain
``open(path, "wb")`` would give it (0o666 less the umask), so every output in a folder is as
readable as the others; only a file built in pieces stays private (0600) meanwhile.
"""

from __future__ import annotations

import errno
import os
import tempfile
import threading
from pathlib import Path

#: How every temporary name here ends; each also starts with a dot (hidden).
TEMP_SUFFIX = ".tmp"


def is_temporary(name: str) -> bool:
    """A name this module gives a file while it is written: what a writer killed mid-write
    (``kill -9``, a lost host) leaves behind, never a finished output."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def write_atomic(path: Path, data: bytes, *, private: bool = False) -> Path:
    """Write ``data`` to ``path`` so that no partial file is ever seen under that name; the
    file gets the mode a plain ``open(path, "wb")`` would (see ``create_temp``), or with
    ``private`` 0600 whatever the umask, from the first byte."""
    try:
        _write_whole(path, data, private)
    except FileNotFoundError:  # a new folder: made only then, not stat-ed for every file
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_whole(path, data, private)
    return path


def _write_whole(path: Path, data: bytes, private: bool) -> None:
    mode = 0o600 if private else 0o666
    handle = _unnamed(path.parent, mode)
    if handle is not None:
        try:
            if private:
                os.fchmod(handle, 0o600)  # the umask may have taken the owner's bits
            _write_all(handle, data)
            if _link(handle, path):
                return
        finally:
            os.close(handle)
    handle, temp = create_temp(path.parent, f".{path.name}.", TEMP_SUFFIX, mode)
    try:
        with os.fdopen(handle, "wb") as out:
            if private:
                os.fchmod(out.fileno(), 0o600)
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


#: Folders whose file system refused a file without a name; ``None`` in it: this system can't.
_NO_UNNAMED: set[str | None] = set()
#: Errors of ``open(O_TMPFILE)`` that mean "not here" (EISDIR: a kernel that predates it).
_UNNAMED_REFUSED = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOSYS}
#: Errors of linking it through /proc that mean "not on this system" (a locked-down /proc).
_LINK_REFUSED = {errno.EXDEV, errno.EPERM, errno.EACCES, errno.ENOENT}
_proc_lock = threading.Lock()
_proc_self: tuple[int, int] | None = None  # (pid, fd of /proc/self): reopened after a fork


def _unnamed(folder: Path, mode: int) -> int | None:
    """A file with no name yet in ``folder``'s file system, or None where there is none."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or None in _NO_UNNAMED or str(folder) in _NO_UNNAMED:
        return None
    if _proc_fd() is None:
        _NO_UNNAMED.add(None)
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno not in _UNNAMED_REFUSED:
            raise
        _NO_UNNAMED.add(str(folder))
        return None


def _proc_fd() -> int | None:
    """This process's /proc/self, through which an unnamed file is given a name."""
    global _proc_self
    pid = os.getpid()
    if _proc_self is None or _proc_self[0] != pid:
        with _proc_lock:
            if _proc_self is None or _proc_self[0] != pid:
                try:
                    _proc_self = (pid, os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY))
                except OSError:
                    return None
    return _proc_self[1]


def _write_all(handle: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view) :]


def _link(handle: int, path: Path) -> bool:
    """Give the unnamed file ``handle`` the name ``path``, replacing a file of that name;
    False if this system can't (the caller writes the file the other way)."""
    proc, source = _proc_fd(), f"fd/{handle}"
    if proc is None:
        return False
    try:
        os.link(source, path, src_dir_fd=proc, follow_symlinks=True)
        return True
    except FileExistsError:  # run again over its own outputs: link beside, then rename
        pass
    except OSError as exc:
        if exc.errno not in _LINK_REFUSED or not path.parent.is_dir():
            raise
        _NO_UNNAMED.add(None)
        return False
    temp = path.with_name(f".{path.name}.{os.urandom(6).hex()}{TEMP_SUFFIX}")
    os.link(source, temp, src_dir_fd=proc, follow_symlinks=True)
    try:
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return True


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
