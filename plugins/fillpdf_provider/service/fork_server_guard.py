"""Makes the service's fork server die with the service, even under kill -9.

The fork server is preloaded with this module first. The service sets
``FILLPDF_FORK_SERVER_PARENT`` to its own pid only while it starts the fork server (from
its main thread: Linux signals a process whose parent *thread* exits), so on import here
the fork server asks to be killed with the service, and exits at once if the service is
already gone. Without this the fork server outlives a killed service whenever it misses
the service's end on a busy machine, and its children convert on. Imported anywhere else
(the variable unset), it only records that this process is no fork server.
"""

from __future__ import annotations

import os

PARENT_VARIABLE = "FILLPDF_FORK_SERVER_PARENT"

#: The fork server's pid in the fork server and the children it forks; None elsewhere.
fork_server_pid: int | None = None

_parent = os.environ.pop(PARENT_VARIABLE, None)
if _parent is not None:
    from fillpdf_provider.service.parent_death import die_with_parent

    die_with_parent(int(_parent))
    fork_server_pid = os.getpid()
