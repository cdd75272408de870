"""A real CeleryExecutor stack on 127.0.0.1, started from docker-compose.yaml.

Each Airflow service runs the command its compose service runs (``airflow <command>``), with
the environment compose gives it: the file is read here, so it cannot drift from what the
tests run. Only what a single machine forces is rewritten: host names become loopback ports
(PostgreSQL, Redis, the api-server), ``${...}`` secrets get test values, and each process
gets its own working directory (AIRFLOW_HOME, a copy of the DAGs, TMPDIR, the cwd): the
workers share no local disk, as on separate hosts. Object storage is the only thing shared.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml

from kits.pgcluster import PgCluster
from kits.servicekit import free_port

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yaml"
AIRFLOW = os.path.join(os.path.dirname(sys.executable), "airflow")
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
SERVICES = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
            "airflow-triggerer")  # fmt: skip
WORKERS = ("airflow-worker-1", "airflow-worker-2")
SECRETS = {
    "POSTGRES_PASSWORD": "unused-on-loopback",
    "AIRFLOW_JWT_SECRET": "fillpdf-test-jwt-secret-0123456789abcdef",
    "AIRFLOW_FERNET_KEY": "",  # filled with a real key at start
    "AIRFLOW_SECRET_KEY": "fillpdf-test-secret-key",
    "FILLPDF_API_KEY": "fpk_unused",
    "S3_ACCESS_KEY": "fillpdf-test",
    "S3_SECRET_KEY": "fillpdf-test-secret",
}
# A worker's name, as Airflow records it in task_instance.hostname.
HOSTNAME_MODULE = 'import os\n\n\ndef name() -> str:\n    return os.environ["FILLPDF_WORKER"]\n'


def compose_service(name: str) -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"][name]


def _substitute(value: str, secrets: Mapping[str, str]) -> str:
    return re.sub(r"\$\{([A-Z_]+)\}", lambda m: secrets[m.group(1)], value)


def _rewrite_url(url: str, netloc: str, path: str | None = None) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=netloc, path=path if path is not None else parts.path).geturl()


@dataclass
class Process:
    name: str
    home: Path
    popen: subprocess.Popen[bytes]

    @property
    def log(self) -> Path:
        return self.home / "process.log"

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} ---\n" + "\n".join(text.splitlines()[-lines:])


@dataclass
class CeleryStack:
    """The running stack: trigger runs, wait for them, read what ran where."""

    root: Path
    metadata_url: str
    env: dict[str, str]
    processes: list[Process] = field(default_factory=list)

    def airflow(self, *args: str, timeout: float = 180) -> str:
        home = self.root / "cli"
        done = subprocess.run(
            [AIRFLOW, *args], env=self._env_for(home, "cli"), cwd=home, capture_output=True,
            text=True, timeout=timeout,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def query(self, sql: str, *params: object) -> list[tuple]:
        import psycopg

        url = self.metadata_url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(url, autocommit=True) as conn:
            return list(conn.execute(sql, params).fetchall())

    def wait_for_dag(self, dag_id: str, timeout: float = 180) -> None:
        for _ in range(int(timeout / 2)):
            if self.query("SELECT 1 FROM dag WHERE dag_id = %s", dag_id):
                return
            self.check_alive()
            time.sleep(2)
        raise TimeoutError(f"{dag_id} was never parsed\n{self.tails()}")

    def trigger(self, dag_id: str, conf: Mapping[str, Any], run_id: str) -> str:
        self.wait_for_dag(dag_id)
        self.airflow("dags", "unpause", dag_id)
        self.airflow("dags", "trigger", dag_id, "--conf", json.dumps(dict(conf)),
                     "--run-id", run_id)  # fmt: skip
        return run_id

    def wait(self, dag_id: str, run_id: str, timeout: float = 600) -> str:
        """The run's final state (success or failed); polls the database every 2 s."""
        for _ in range(int(timeout / 2)):
            rows = self.query(
                "SELECT state FROM dag_run WHERE dag_id = %s AND run_id = %s", dag_id, run_id
            )
            if rows and rows[0][0] in ("success", "failed"):
                return str(rows[0][0])
            self.check_alive()
            time.sleep(2)
        raise TimeoutError(f"{dag_id} {run_id} did not finish\n{self.tails()}")

    def clear(self, dag_id: str, run_id: str, task_ids: list[str]) -> None:
        """Clear tasks (and what follows them) of a run, as the UI's Clear button does."""
        base = self.env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].split("/execution")[0]
        token = httpx.post(f"{base}/auth/token", json={"username": "admin",
                           "password": "admin"}, timeout=30).json()["access_token"]  # fmt: skip
        answer = httpx.post(
            f"{base}/api/v2/dags/{dag_id}/clearTaskInstances",
            headers={"Authorization": f"Bearer {token}"},
            json={"dag_run_id": run_id, "task_ids": task_ids, "include_downstream": True,
                  "dry_run": False, "only_failed": False},
            timeout=60,
        )  # fmt: skip
        answer.raise_for_status()
        cleared = answer.json()["task_instances"]
        if not cleared:
            raise RuntimeError(f"nothing cleared for {task_ids} in {run_id}")

    def wait_for_task(
        self, dag_id: str, run_id: str, task_id: str, not_state: str, timeout: float = 600
    ) -> str:
        """The task's final state once it is no longer ``not_state`` (after a clear)."""
        for _ in range(int(timeout / 2)):
            rows = self.query(
                "SELECT state FROM task_instance WHERE dag_id = %s AND run_id = %s "
                "AND task_id = %s", dag_id, run_id, task_id,
            )  # fmt: skip
            state = rows[0][0] if rows else None
            if state in ("success", "failed", "upstream_failed") and state != not_state:
                return str(state)
            self.check_alive()
            time.sleep(2)
        raise TimeoutError(f"{task_id} of {run_id} did not finish again\n{self.tails()}")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        rows = self.query(
            "SELECT task_id, map_index, state, hostname FROM task_instance "
            "WHERE dag_id = %s AND run_id = %s ORDER BY task_id, map_index", dag_id, run_id,
        )  # fmt: skip
        return [dict(zip(("task_id", "map_index", "state", "hostname"), r, strict=True))
                for r in rows]  # fmt: skip

    def task_logs(self, dag_id: str, run_id: str, task_id: str) -> str:
        """Every attempt's log of a task, from the workers' own log folders."""
        texts = []
        for process in self.processes:
            base = process.home / "logs"
            for path in sorted(base.rglob("*.log")) if base.exists() else []:
                parts = str(path)
                if f"dag_id={dag_id}" in parts and f"run_id={run_id}" in parts \
                        and f"task_id={task_id}" in parts:  # fmt: skip
                    texts.append(path.read_text(errors="replace"))
        return "\n".join(texts)

    def worker_homes(self) -> list[Path]:
        return [p.home for p in self.processes if p.name in WORKERS]

    def check_alive(self) -> None:
        dead = [p for p in self.processes if p.popen.poll() is not None]
        if dead:
            raise RuntimeError("a stack process exited:\n" + "\n".join(p.tail() for p in dead))

    def tails(self) -> str:
        return "\n".join(p.tail() for p in self.processes)

    def _env_for(self, home: Path, name: str) -> dict[str, str]:
        dags = home / "dags"
        env = dict(self.env)
        env.update(
            AIRFLOW_HOME=str(home),
            AIRFLOW__CORE__DAGS_FOLDER=str(dags),
            TMPDIR=str(home / "tmp"),
            FILLPDF_WORKER=name,
        )
        return env

    def start(self, name: str, command: str, dags: Path, extra: Mapping[str, str]) -> None:
        home = self.root / name
        (home / "tmp").mkdir(parents=True)
        shutil.copytree(dags, home / "dags")
        (home / "fillpdf_test_host.py").write_text(HOSTNAME_MODULE)
        env = self._env_for(home, name)
        env.update(extra)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(home), env.get("PYTHONPATH")]))
        log = (home / "process.log").open("wb")
        popen = subprocess.Popen(
            [AIRFLOW, *command.split()], env=env, cwd=home, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.processes.append(Process(name, home, popen))

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.popen.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.processes:
            try:
                process.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.popen.pid, signal.SIGKILL)
                process.popen.wait(10)


def missing_parts() -> str | None:
    """Why the stack cannot start here, or None."""
    from kits.pgcluster import find_pg_bin

    if not os.access(REDIS_SERVER, os.X_OK):
        return "no redis-server (apt-get install redis-server)"
    if find_pg_bin() is None:
        return "no PostgreSQL server binaries (apt-get install postgresql)"
    return None


@contextlib.contextmanager
def _redis(root: Path) -> Iterator[int]:
    port = free_port()
    folder = root / "redis"
    folder.mkdir()
    process = subprocess.Popen(
        [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", str(folder)],
        stdout=(folder / "redis.log").open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        for _ in range(100):
            with contextlib.suppress(OSError):
                import socket

                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(10)


def _common_env(metadata_url: str, redis_port: int, api_port: int, root: Path) -> dict[str, str]:
    from cryptography.fernet import Fernet

    secrets = {**SECRETS, "AIRFLOW_FERNET_KEY": Fernet.generate_key().decode()}
    compose = compose_service("airflow-worker-1")["environment"]
    env = {
        name: value
        for name, value in os.environ.items()
        # the tests' own Airflow settings (unit-test mode, their DAG folder) stay out
        if not name.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_"))
    }
    env.update({name: _substitute(str(value), secrets) for name, value in compose.items()})
    netloc = urlsplit(metadata_url).netloc
    database = urlsplit(metadata_url).path
    compose_url = env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = _rewrite_url(compose_url, netloc, database)
    backend = env["AIRFLOW__CELERY__RESULT_BACKEND"]
    env["AIRFLOW__CELERY__RESULT_BACKEND"] = _rewrite_url(backend, netloc, database)
    env["AIRFLOW__CELERY__BROKER_URL"] = _rewrite_url(
        env["AIRFLOW__CELERY__BROKER_URL"], f"127.0.0.1:{redis_port}"
    )
    env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] = _rewrite_url(
        env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"], f"127.0.0.1:{api_port}"
    )
    passwords = root / "passwords.json"
    passwords.write_text(json.dumps({"admin": "admin"}))
    env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] = str(passwords)
    env.update(
        AIRFLOW__API__HOST="127.0.0.1",
        AIRFLOW__API__PORT=str(api_port),
        AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT=str(free_port()),
        AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT=str(free_port()),
        AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL="5",
        AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
        AIRFLOW__CORE__HOSTNAME_CALLABLE="fillpdf_test_host.name",
    )
    return env


@contextlib.contextmanager
def celery_stack(
    root: Path,
    dags: Path,
    extra_env: Mapping[str, str] | None = None,
    workers: Sequence[str] = WORKERS,
) -> Iterator[CeleryStack]:
    """Start PostgreSQL, Redis and every Airflow service of docker-compose.yaml, the
    ``workers`` (both of its workers by default) among them, each in its own folder under
    ``root``; stop and remove them all after."""
    cluster = PgCluster()
    cluster.start()
    try:
        metadata_url = cluster.new_database("airflow")
        with _redis(root) as redis_port:
            api_port = free_port()
            env = _common_env(metadata_url, redis_port, api_port, root)
            env.update(extra_env or {})
            stack = CeleryStack(root, metadata_url, env)
            (root / "cli" / "tmp").mkdir(parents=True)
            shutil.copytree(dags, root / "cli" / "dags")
            stack.airflow("db", "migrate", timeout=600)
            try:
                for name in SERVICES:
                    stack.start(name, compose_service(name)["command"], dags, {})
                _wait_for_api(stack, api_port)
                for name in workers:
                    command = compose_service(name)["command"]
                    # the per-host flags a deployment gives each worker: its name, its queue
                    flags = f" --celery-hostname {name}@%h --queues default,{name}"
                    stack.start(name, command + flags, dags, {
                        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
                    })  # fmt: skip
                _wait_for_workers(stack, workers)
                yield stack
            finally:
                stack.stop()
    finally:
        cluster.stop()


def _wait_for_api(stack: CeleryStack, port: int, timeout: float = 240) -> None:
    for _ in range(int(timeout)):
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/version", timeout=2).is_success:
                return
        stack.check_alive()
        time.sleep(1)
    raise TimeoutError(f"the api-server did not answer\n{stack.tails()}")


def _wait_for_workers(stack: CeleryStack, workers: Sequence[str], timeout: float = 240) -> None:
    for _ in range(int(timeout)):
        logs = [p.log.read_text(errors="replace") for p in stack.processes if p.name in workers]
        if all(" ready." in text for text in logs):
            return
        stack.check_alive()
        time.sleep(1)
    raise TimeoutError(f"the workers did not start\n{stack.tails()}")
