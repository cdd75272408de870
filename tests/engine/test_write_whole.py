"""``write_atomic``: a file is never seen half written, under either way of writing it.

On Linux a file is written with no name and linked into place; where that is refused (a
file system without ``O_TMPFILE``, a name already taken) it goes through a hidden temporary
name. Both leave nothing else in the folder, keep the mode rules, and work in a forked
child (whose ``/proc/self`` is not its parent's).
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from fillpdf_provider.engine import files
from fillpdf_provider.engine.files import is_temporary, write_atomic

UNNAMED = getattr(os, "O_TMPFILE", None) is not None and os.path.isdir("/proc/self/fd")


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(params=["unnamed", "temporary name"])
def way(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A folder written the given way (the second as on a file system that refuses the
    first: the folder is recorded as refusing, as a refusal records it)."""
    folder = tmp_path / request.param.replace(" ", "-")
    folder.mkdir()
    if request.param == "unnamed" and not UNNAMED:
        pytest.skip("this system has no O_TMPFILE or /proc")
    if request.param == "temporary name":
        files._NO_UNNAMED.add(str(folder))
        request.addfinalizer(lambda: files._NO_UNNAMED.discard(str(folder)))
    return folder


def test_a_file_is_whole_and_alone_when_it_gets_its_name(
    way: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(3 << 20)  # more than one write() call may take
    named: list[list[str]] = []
    link, replace = os.link, os.replace

    def watching_link(*args: object, **kwargs: object) -> None:
        link(*args, **kwargs)  # type: ignore[arg-type]
        named.append(_entries(way))

    def watching_replace(source: str, target: Path) -> None:
        replace(source, target)
        named.append(_entries(way))

    monkeypatch.setattr(os, "link", watching_link)
    monkeypatch.setattr(os, "replace", watching_replace)
    target = write_atomic(way / "1.pdf", data)
    assert target.read_bytes() == data
    assert named[-1] == ["1.pdf"]
    assert _entries(way) == ["1.pdf"]


def test_writing_again_replaces_the_file_and_leaves_no_temporary_name(way: Path) -> None:
    write_atomic(way / "1.pdf", b"%PDF-1.7 first")
    write_atomic(way / "1.pdf", b"%PDF-1.7 second")
    assert (way / "1.pdf").read_bytes() == b"%PDF-1.7 second"
    assert _entries(way) == ["1.pdf"]
    assert not any(is_temporary(name) for name in _entries(way))


def test_a_new_folder_is_made_on_the_way(way: Path) -> None:
    write_atomic(way / "a" / "b" / "1.pdf", b"%PDF-")
    assert (way / "a" / "b" / "1.pdf").read_bytes() == b"%PDF-"


def _write_in_child(path: str) -> None:
    write_atomic(Path(path), f"from {os.getpid()}".encode())


def test_a_forked_child_names_its_own_file(way: Path) -> None:
    write_atomic(way / "parent.pdf", b"parent")  # the parent has opened /proc/self first
    child = multiprocessing.get_context("fork").Process(
        target=_write_in_child, args=(str(way / "child.pdf"),)
    )
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert (way / "child.pdf").read_bytes() == f"from {child.pid}".encode()
    assert (way / "parent.pdf").read_bytes() == b"parent"
