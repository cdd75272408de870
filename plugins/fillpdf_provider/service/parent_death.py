"""A process that dies with its parent: the service's fork server and its children.

Its own module, importing nothing of ours, so that ``fork_server_guard`` (preloaded first in
the fork server) and ``isolation`` both use it without importing each other.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Ask Linux to kill this process when its parent exits (elsewhere: a no-op).

    The service's fork server asks it of the service (``fork_server_guard``), and each
    child of the fork server asks it of the fork server: kill -9 on the service takes the
    whole tree down, however busy the machine. ``parent`` is the pid the parent had: if it
    is gone already (it died before the request took), this process exits at once.
    """
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(1)
