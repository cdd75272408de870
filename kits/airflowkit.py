"""A real Airflow API server for tests: ``airflow api-server`` in a subprocess on a free port.

It gets its own AIRFLOW_HOME (a migrated SQLite database, no example DAGs) and the simple
auth manager with users whose passwords the test chooses, so a test logs in the way a person
does. The fillpdf plugin is loaded from its ``airflow.plugins`` entry point, as installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from kits.servicekit import raise_if_port_taken, start_on_free_port

START_TIMEOUT = 90.0
AIRFLOW = os.path.join(os.path.dirname(sys.executable), "airflow")


@dataclass(frozen=True)
class User:
    name: str
    role: str  # the simple auth manager's roles: viewer, user, op, admin
    password: str


def airflow_env(home: Path, users: list[User], extra: dict[str, str] | None = None) -> dict:
    """The environment of every ``airflow`` command run against ``home``."""
    env = {
        name: value
        for name, value in os.environ.items()
        # the tests' own Airflow settings (unit-test mode, their DAG folder) stay out
        if not name.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_"))
    }
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGS_FOLDER=str(home / "dags"),
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        AIRFLOW__CORE__AUTH_MANAGER=(
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="False",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=",".join(f"{u.name}:{u.role}" for u in users),
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(home / "passwords.json"),
        AIRFLOW__API__HOST="127.0.0.1",
        AIRFLOW__API_AUTH__JWT_SECRET="fillpdf-test-jwt-secret-" + home.name,
        AIRFLOW__API__SECRET_KEY="fillpdf-test-secret-" + home.name,
        AIRFLOW__LOGGING__LOGGING_LEVEL="INFO",
    )
    env.update(extra or {})
    return env


def run_airflow(args: list[str], env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        [AIRFLOW, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, (
        f"airflow {' '.join(args)} exited with {done.returncode}:\n"
        + done.stdout[-3000:]
        + done.stderr[-3000:]
    )
    return done.stdout


@dataclass
class ApiServer:
    base_url: str
    home: Path
    env: dict[str, str]
    log_file: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_file.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def token(self, user: User) -> str:
        """A JWT for ``user`` from the auth manager's own token endpoint."""
        answer = httpx.post(
            f"{self.base_url}/auth/token",
            json={"username": user.name, "password": user.password},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["access_token"])

    def stop(self) -> None:
        """SIGTERM to the server's process group (uvicorn and its workers), then SIGKILL."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        # whatever the server started in its own session (workers) goes with it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


def prepare_home(home: Path, users: list[User], extra_env: dict[str, str] | None = None) -> dict:
    """Migrate a fresh metadata database in ``home`` and write the users' passwords."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dags").mkdir(exist_ok=True)
    (home / "passwords.json").write_text(json.dumps({u.name: u.password for u in users}))
    env = airflow_env(home, users, extra_env)
    run_airflow(["db", "migrate"], env)
    return env


def start_api_server(env: dict[str, str]) -> ApiServer:
    """Start ``airflow api-server`` on 127.0.0.1 and wait until its health check answers."""
    return start_on_free_port(lambda port: _api_server_on(port, env))


def _api_server_on(port: int, env: dict[str, str]) -> ApiServer:
    home = Path(env["AIRFLOW_HOME"])
    log_file = home / "api-server.log"
    command = [AIRFLOW, "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    server = ApiServer(f"http://127.0.0.1:{port}", home, env, log_file, process)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise_if_port_taken("airflow api-server", server.log_tail())
            raise RuntimeError(
                f"airflow api-server exited with {process.returncode}:\n{server.log_tail()}"
            )
        try:
            health = httpx.get(f"{server.base_url}/api/v2/monitor/health", timeout=2)
            if health.status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(
        f"airflow api-server did not answer in {START_TIMEOUT:.0f} s:\n" + server.log_tail()
    )
