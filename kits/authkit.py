"""An Airflow auth manager with rules per connection, for tests of who may reach what.

Airflow's simple auth manager decides by role alone. ``OneConnectionAuthManager`` keeps its
users and roles and adds: a user named in ``$FILLPDF_TEST_CONNECTION_RULES`` (JSON,
``{"user": ["conn_id", ...]}``) may reach only those connections. A check that names no
connection (Airflow's ``connection_id`` path parameter missing) is refused for such a user,
so a route that forgets to name its connection fails closed. The API server imports it by
its dotted path (``[core] auth_manager``), with the repository root on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

RULES_VARIABLE = "FILLPDF_TEST_CONNECTION_RULES"
DOTTED_PATH = "kits.authkit.OneConnectionAuthManager"


class OneConnectionAuthManager(SimpleAuthManager):
    """The simple auth manager, with some users kept to the connections their rule lists."""

    def is_authorized_connection(self, *, method: Any, user: Any, details: Any = None) -> bool:
        rules: dict[str, list[str]] = json.loads(os.environ.get(RULES_VARIABLE) or "{}")
        allowed = rules.get(user.get_name())
        if allowed is not None:
            conn_id = details.conn_id if details is not None else None
            if conn_id not in allowed:
                return False
        return bool(super().is_authorized_connection(method=method, user=user, details=details))
