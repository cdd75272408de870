"""Inputs and outputs anywhere Airflow's ObjectStoragePath reaches: local paths, file://,
s3://, gs://...

A remote location is reached through an Airflow connection: the one named in the URI
(``s3://my_conn@bucket/key``), else the one given as ``conn_id``, else the scheme's standard
connection (``aws_default`` for s3). Inputs are streamed to a private temporary file when the
engine needs a file; outputs go to the store as whole objects. Nothing is ever written to a
local path made from a URI.
"""

from __future__ import annotations

import contextlib
import fnmatch
import getpass
import glob
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from fillpdf_provider.engine.files import is_temporary, write_atomic

if TYPE_CHECKING:
    # Imported where a remote location is first reached: importing Airflow configures it,
    # which makes its home and log folders (~/airflow/logs without $AIRFLOW_HOME), and the
    # embedded engine on local folders needs none of it.
    from airflow.sdk import ObjectStoragePath

LOCAL_PROTOCOLS = ("", "file", "local")
# The connection Airflow's own providers use for a scheme when none is named.
DEFAULT_CONN_IDS = {
    "s3": "aws_default",
    "s3a": "aws_default",
    "gs": "google_cloud_default",
    "gcs": "google_cloud_default",
    "abfs": "wasb_default",
    "az": "wasb_default",
    "wasb": "wasb_default",
}
COPY_BUFFER = 1 << 20
# A batch's small files go to a remote store in groups, uploaded concurrently by the
# filesystem (one request each, many at a time): one at a time, a round trip per file
# would be the whole cost of a row.
UPLOAD_GROUP_FILES = 64
UPLOAD_GROUP_BYTES = 16 << 20


class UploadError(RuntimeError):
    """Files a batch made could not be stored. Not an ``OSError`` on purpose: a row's own
    failure is recorded and the batch goes on, but this one fails the batch."""


def storage_path(location: str | os.PathLike[str], conn_id: str | None = None) -> ObjectStoragePath:
    """``location`` as an ObjectStoragePath bound to its connection (see the module doc)."""
    from airflow.sdk import ObjectStoragePath

    text = str(location)
    parts = urlsplit(text)
    if "@" in parts.netloc:  # the URI names its connection
        return ObjectStoragePath(text)
    conn = conn_id or DEFAULT_CONN_IDS.get(parts.scheme.lower())
    return ObjectStoragePath(text, conn_id=conn) if conn else ObjectStoragePath(text)


def local_path(location: str | os.PathLike[str]) -> Path | None:
    """The local path of ``location``, or None if it lives in remote storage."""
    text = str(location)
    if "://" not in text:
        return Path(text)
    parts = urlsplit(text)
    return Path(parts.path) if parts.scheme.lower() in LOCAL_PROTOCOLS else None


class NotAFile(FileNotFoundError, IsADirectoryError):
    """A folder where a file was expected. A ``FileNotFoundError`` too, so a caller that
    names a missing input names this one as well (with this message, which says why)."""


def read_bytes(location: str | os.PathLike[str], conn_id: str | None = None) -> bytes:
    """The contents of a file or an object; a missing one, a folder and one the worker may
    not read are refused naming ``location`` and what to do."""
    local = local_path(location)
    if local is not None:
        if not local.is_file():
            raise missing(location, conn_id)
        try:
            return local.read_bytes()
        except PermissionError:
            raise _refused(location, conn_id) from None
    path = storage_path(location, conn_id)
    try:
        if not path.is_file():
            raise missing(location, conn_id)
        return path.read_bytes()
    except PermissionError:
        raise _refused(location, conn_id) from None


@contextlib.contextmanager
def readable(location: str | os.PathLike[str], conn_id: str | None = None) -> Iterator[Path]:
    """A local file with the contents of ``location`` (remote files are copied, then removed)."""
    local = local_path(location)
    if local is not None:
        if not local.exists() or local.is_dir():  # a pipe is read as it is
            raise missing(location, conn_id)
        yield local
        return
    source = storage_path(location, conn_id)
    with tempfile.TemporaryDirectory(prefix="fillpdf-in-") as folder:
        target = Path(folder) / source.name
        try:
            if not source.is_file():
                raise missing(location, conn_id)
            with source.open("rb") as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst, COPY_BUFFER)
        except PermissionError:
            raise _refused(location, conn_id) from None
        yield target


def missing(location: str | os.PathLike[str], conn_id: str | None = None) -> FileNotFoundError:
    """The error for a file that is not at ``location``: where it was looked for, and what
    to do (a folder is ``NotAFile``, with its own fix)."""
    shown = repr(str(location))
    local = local_path(location)
    if local is not None:
        if local.is_dir():
            return NotAFile(f"{shown} is a folder, not a file; give the path of a file in it.")
        where = f" (relative to the working directory {os.getcwd()!r})"
        return FileNotFoundError(
            f"{shown} does not exist{where if not local.is_absolute() else ''}; check the "
            "path. It is read on the worker: the file must be on the worker's disk, or give "
            "a URI the worker can reach (s3://bucket/key)."
        )
    with contextlib.suppress(Exception):  # only to tell a folder: the answer is "missing"
        if storage_path(location, conn_id).is_dir():
            return NotAFile(
                f"{shown} is a folder (objects under that prefix), not an object; give the URI "
                "of an object in it."
            )
    return FileNotFoundError(
        f"{shown} does not exist (no such object, looked up {_through(location, conn_id)}); "
        "check the bucket and the key, and that the connection reaches that store."
    )


def _refused(location: str | os.PathLike[str], conn_id: str | None) -> PermissionError:
    shown = repr(str(location))
    if local_path(location) is not None:
        return PermissionError(
            f"{shown} cannot be read: permission denied. Make it readable by the user the "
            f"worker runs as{_user()}, or copy it where the worker can read it."
        )
    return PermissionError(
        f"{shown} cannot be read: the store refused access ({_through(location, conn_id)}); "
        "give that connection read access to it, or name another connection in the URI "
        "(s3://CONN_ID@bucket/key)."
    )


def _through(location: str | os.PathLike[str], conn_id: str | None) -> str:
    """Which connection a remote location is reached through, for a message."""
    conn = storage_path(location, conn_id).conn_id
    return f"through connection {conn!r}" if conn else "with no connection"


def _user() -> str:
    try:
        return f" ({getpass.getuser()!r})"
    except (KeyError, OSError):  # no name for the uid (a container's arbitrary user)
        return ""


class Store:
    """A folder of outputs, local or in object storage, that only ever shows whole files.

    Locally each file is written whole before it gets its name (``files.write_atomic``). In
    an object store an object appears only when its upload completes, so a key is written
    once, whole.
    ``Store`` is also the engine's output sink (``write`` and ``publish``). With ``batched``,
    remote writes are grouped and uploaded concurrently; ``publish`` and ``flush`` upload
    what is pending first, so a manifest is never published before the files it lists.
    """

    def __init__(
        self,
        location: str | os.PathLike[str],
        conn_id: str | None = None,
        *,
        batched: bool = False,
    ) -> None:
        self.location = str(location).rstrip("/") or str(location)
        self.conn_id = conn_id
        self.local = local_path(location)
        self.remote = None if self.local is not None else storage_path(location, conn_id)
        self.batched = batched
        self._pending: dict[str, bytes] = {}
        self._pending_bytes = 0

    def __repr__(self) -> str:
        return f"Store({self.location!r})"

    def uri(self, name: str) -> str:
        return f"{self.location}/{name}"

    def write(self, name: str, data: bytes) -> None:
        """Publish ``data`` under ``name`` (a relative, /-separated name)."""
        if self.local is not None:
            write_atomic(self.local / name, data)
            return
        assert self.remote is not None
        if not self.batched:
            (self.remote / name).write_bytes(data)
            return
        self._pending[(self.remote / name).path] = data
        self._pending_bytes += len(data)
        if len(self._pending) >= UPLOAD_GROUP_FILES or self._pending_bytes >= UPLOAD_GROUP_BYTES:
            self.flush()

    def flush(self) -> None:
        """Upload every pending file (each one whole; all of them before this returns)."""
        if not self._pending:
            return
        assert self.remote is not None
        pending, self._pending, self._pending_bytes = self._pending, {}, 0
        try:
            self.remote.fs.pipe(pending)
        except Exception as exc:  # not a bad row: the files before it are not stored either
            raise UploadError(
                f"Uploading {len(pending)} files to {self.location} failed ({exc}); nothing "
                "was published for them and the task can run again."
            ) from exc

    def publish(self, name: str, path: Path) -> None:
        """Move the finished local file ``path`` to ``name`` (it is gone from ``path`` after)."""
        if self.local is not None:
            target = self.local / name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(path, target)
            except OSError:  # another file system: copy beside the target, then rename
                write_atomic(target, path.read_bytes())
                path.unlink()
            return
        assert self.remote is not None
        self.flush()
        with path.open("rb") as src, (self.remote / name).open("wb") as dst:
            shutil.copyfileobj(src, dst, COPY_BUFFER)
        path.unlink()

    def plain_folder(self) -> Path | None:
        """The local folder, when ``write`` is this class's: a batch's writer process may
        then write the files there itself (``engine.file_writer``)."""
        return self.local if type(self).write is Store.write else None

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A private local folder for files that are built before they are published (beside
        the outputs when they are local, so publishing is a rename)."""
        parent = None
        if self.local is not None:
            self.local.mkdir(parents=True, exist_ok=True)
            parent = self.local
        with tempfile.TemporaryDirectory(prefix=".fillpdf-staging-", dir=parent) as folder:
            yield Path(folder)

    def scratch(self) -> Path | None:
        """Where the engine builds a file before publishing it (None: the system's temp)."""
        if self.local is None:
            return None
        self.local.mkdir(parents=True, exist_ok=True)
        return self.local

    def exists(self, name: str) -> bool:
        if self.local is not None:
            return (self.local / name).is_file()
        assert self.remote is not None
        return (self.remote / name).is_file()

    def read_bytes(self, name: str) -> bytes:
        if self.local is not None:
            return (self.local / name).read_bytes()
        assert self.remote is not None
        return (self.remote / name).read_bytes()

    @contextlib.contextmanager
    def readable(self, name: str) -> Iterator[Path]:
        if self.local is not None:
            where: str | Path = self.local / name
        else:
            assert self.remote is not None
            where = f"{self.location}/{name}"
        with readable(where, self.conn_id) as p:
            yield p

    def names(self, folder: str, pattern: str = "*") -> list[str]:
        """Names of the files in ``folder`` matching ``pattern``, sorted (no recursion)."""
        if self.local is not None:
            here = self.local / folder
            if not here.is_dir():
                return []
            return sorted(p.name for p in here.iterdir() if p.is_file()
                          and fnmatch.fnmatch(p.name, pattern))  # fmt: skip
        assert self.remote is not None
        there = self.remote / folder
        if not there.exists():
            return []
        return sorted(p.name for p in there.iterdir() if fnmatch.fnmatch(p.name, pattern))

    def remove_temporary(self, folder: str = "") -> int:
        """Remove what writers killed mid-write left in ``folder`` (their hidden temporary
        files); call it only once no writer of this store is running. An object store has
        none: an object appears whole or not at all."""
        if self.local is None or not (self.local / folder).is_dir():
            return 0
        removed = 0
        with os.scandir(self.local / folder) as entries:
            for entry in entries:
                if is_temporary(entry.name) and entry.is_file(follow_symlinks=False):
                    Path(entry.path).unlink(missing_ok=True)
                    removed += 1
        return removed

    def remove(self, name: str) -> None:
        if self.local is not None:
            (self.local / name).unlink(missing_ok=True)
            return
        assert self.remote is not None
        with contextlib.suppress(FileNotFoundError):
            (self.remote / name).unlink()


def expand(patterns: str | list[str], conn_id: str | None = None) -> list[str]:
    """Paths, globs and URIs to a sorted list of files (a glob that matches nothing is an
    error: a typo should not look like an empty inbox; so is a local folder, which is no
    file and whose files a glob names)."""
    items = [patterns] if isinstance(patterns, str) else list(patterns)
    found: list[str] = []
    for item in items:
        local = local_path(item)
        if not any(ch in str(item) for ch in "*?["):
            if local is not None and local.is_dir():
                example = str(item).rstrip("/") + "/*.pdf"
                raise NotAFile(
                    f"{str(item)!r} is a folder; give a glob such as {example!r} for the PDFs "
                    "in it, or the paths of its files."
                )
            found.append(str(item))
            continue
        if local is not None:
            matches = sorted(glob.glob(str(local)))
        else:
            prefix = str(item).split("*", 1)[0].rsplit("/", 1)[0]
            root = storage_path(prefix, conn_id)
            pattern = str(item)[len(prefix) :].lstrip("/")
            base = root.path.rstrip("/")
            found_paths = (p.path[len(base) :].lstrip("/") for p in root.glob(pattern))
            matches = sorted(f"{prefix}/{rest}" for rest in found_paths)
        if not matches:
            raise FileNotFoundError(_no_match(str(item), local, conn_id))
        found.extend(matches)
    return sorted(dict.fromkeys(found))


def _no_match(item: str, local: Path | None, conn_id: str | None) -> str:
    """Why a glob matched nothing, as far as can be told, and what to check."""
    why = ""
    if local is not None:
        folder = local
        while any(ch in str(folder) for ch in "*?["):  # the folder the pattern starts in
            folder = folder.parent
        if not folder.exists():
            why = f" (the folder {str(folder)!r} does not exist)"
    else:
        why = f" (looked up {_through(item, conn_id)})"
    return (
        f"No file matches {item!r}{why}: check the folder and the pattern (a glob is "
        "case-sensitive: *.pdf does not match FORM.PDF)."
    )
