"""Shared fixtures of the engine and CLI tests: the ready-made forms, built once per session."""

from __future__ import annotations

import copy
import os
import tempfile

# Airflow reads its configuration once, at import: point it at a private home first.
os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="fillpdf-airflow-")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = os.path.join(os.path.dirname(__file__), "..", "dags")

import pytest

from kits import viewcheck
from kits.formkit import bench_form, sample_form


@pytest.fixture(autouse=True, scope="session")
def _quiet_pdf_logs() -> None:
    viewcheck.quiet_pdf_logs()


@pytest.fixture(scope="session")
def bench_pdf() -> bytes:
    """formkit's dense 32-field business form."""
    return bench_form()


@pytest.fixture(scope="session")
def sample_pdf() -> bytes:
    """formkit's one-page membership application with every field kind."""
    return sample_form()[0]


# --------------------------------------------------------------------------- the service

_databases = iter(range(1, 10_000))


@pytest.fixture(scope="session")
def pg_cluster():
    """A private PostgreSQL for the session; skipped where none is installed (CI installs it)."""
    import os

    from kits.pgcluster import PgCluster, find_pg_bin

    if find_pg_bin() is None:
        if os.environ.get("FILLPDF_REQUIRE_POSTGRES") == "1":
            pytest.fail("PostgreSQL server binaries are missing: apt-get install postgresql")
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql to run these)")
    with PgCluster() as cluster:
        yield cluster


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Each service test module runs once per supported database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'fillpdf.db'}"
    cluster = request.getfixturevalue("pg_cluster")
    return cluster.new_database(f"fillpdf_{next(_databases)}")


@pytest.fixture(scope="module")
def server(database_url: str, tmp_path_factory: pytest.TempPathFactory):
    """A running ``fillpdf serve`` on that database (one per module and database), its clock
    mid-month so no quota period ends under a test."""
    from kits.servicekit import start_server

    running = start_server(tmp_path_factory.mktemp("service"), database_url)
    running.start_mid_month()
    yield running
    running.stop()


# --------------------------------------------------------------------------- Airflow


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """A migrated metadata database in the tests' private AIRFLOW_HOME (for dag.test)."""
    import subprocess
    import sys

    airflow = os.path.join(os.path.dirname(sys.executable), "airflow")
    done = subprocess.run([airflow, "db", "migrate"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.fixture(scope="session")
def session_dagbag(airflow_db: None):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert not bag.import_errors, bag.import_errors
    return bag


@pytest.fixture
def dagbag(session_dagbag):
    """The DAGs, every param's default put back after the test.

    ``dag.test()`` resolves a run's conf into the Param objects the DAG and its tasks hold
    (Airflow's ``process_params`` copies them by reference), so in one process a later run
    without that key would see it: a test would depend on the tests before it.
    """
    params = [
        param
        for dag in session_dagbag.dags.values()
        for holder in (dag, *dag.tasks)
        for param in holder.params.values()
        if hasattr(param, "value")
    ]
    saved = [(param, copy.deepcopy(param.value)) for param in params]
    yield session_dagbag
    for param, value in saved:
        param.value = value
