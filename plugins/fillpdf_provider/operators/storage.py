"""Inputs and outputs anywhere Airflow's ObjectStoragePath reaches: local paths, file://,
s3://, gs://... Local ones are used in place; remote ones are copied through a local staging
folder, so the engine always reads and writes plain files (and writes them atomically)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from airflow.sdk import ObjectStoragePath

LOCAL_PROTOCOLS = ("", "file", "local")


def storage_path(location: str | os.PathLike[str]) -> ObjectStoragePath:
    return ObjectStoragePath(str(location))


def local_path(location: str | os.PathLike[str]) -> Path | None:
    """The local path of ``location``, or None if it lives in remote storage."""
    text = str(location)
    if "://" not in text:
        return Path(text)
    path = storage_path(text)
    return Path(path.path) if path.protocol in LOCAL_PROTOCOLS else None


def read_bytes(location: str | os.PathLike[str]) -> bytes:
    local = local_path(location)
    if local is not None:
        if not local.is_file():
            raise FileNotFoundError(f"No such file: {location}")
        return local.read_bytes()
    return storage_path(location).read_bytes()


@contextlib.contextmanager
def readable(location: str | os.PathLike[str]) -> Iterator[Path]:
    """A local file with the contents of ``location`` (remote files are copied, then removed)."""
    local = local_path(location)
    if local is not None:
        if not local.exists():
            raise FileNotFoundError(f"No such file: {location}")
        yield local
        return
    source = storage_path(location)
    with tempfile.TemporaryDirectory(prefix="fillpdf-in-") as folder:
        target = Path(folder) / source.name
        with source.open("rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        yield target


@contextlib.contextmanager
def writable_dir(location: str | os.PathLike[str]) -> Iterator[Path]:
    """A local folder whose files end up in ``location`` when the block ends without error."""
    local = local_path(location)
    if local is not None:
        local.mkdir(parents=True, exist_ok=True)
        yield local
        return
    with tempfile.TemporaryDirectory(prefix="fillpdf-out-") as folder:
        yield Path(folder)
        upload_dir(Path(folder), storage_path(location))


def upload_dir(folder: Path, target: ObjectStoragePath) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            destination = target / path.relative_to(folder).as_posix()
            destination.parent.mkdir(parents=True, exist_ok=True)
            with path.open("rb") as src, destination.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def expand(patterns: str | list[str]) -> list[str]:
    """Paths, globs and URIs to a sorted list of files (a glob that matches nothing is an
    error: a typo should not look like an empty inbox)."""
    items = [patterns] if isinstance(patterns, str) else list(patterns)
    found: list[str] = []
    for item in items:
        if not any(ch in str(item) for ch in "*?["):
            found.append(str(item))
            continue
        local = local_path(item)
        if local is not None:
            matches = sorted(glob.glob(str(local)))
        else:
            path = storage_path(item)
            root = storage_path(str(item).split("*", 1)[0].rsplit("/", 1)[0])
            pattern = str(path)[len(str(root)) :].lstrip("/")
            matches = sorted(str(p) for p in root.glob(pattern))
        if not matches:
            raise FileNotFoundError(f"No file matches {item!r}.")
        found.extend(matches)
    return sorted(dict.fromkeys(found))
