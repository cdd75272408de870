"""docker-compose.yaml, checked without a Docker engine: the services the stack needs, pinned
images, health checks, the FillPDF connection, secrets only through .env, mounts that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yaml").read_text())
SERVICES = COMPOSE["services"]
LONG_RUNNING = [
    "postgres",
    "redis",
    "fillpdf",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-worker-1",
    "airflow-worker-2",
    "s3",
]


def test_the_stack_has_every_service() -> None:
    assert set(LONG_RUNNING) | {"airflow-init", "fillpdf-init", "s3-init"} == set(SERVICES)
    common = SERVICES["airflow-scheduler"]["environment"]
    assert common["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert common["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://redis:6379")
    assert "@postgres:5432/airflow" in common["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    commands = {name: service.get("command") for name, service in SERVICES.items()}
    assert commands["airflow-worker-1"] == commands["airflow-worker-2"] == "celery worker"
    assert commands["airflow-triggerer"] == "triggerer"
    assert commands["airflow-dag-processor"] == "dag-processor"


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_images_are_pinned(name: str) -> None:
    image = SERVICES[name]["image"]
    repository, _, tag = image.rpartition(":")
    assert repository and re.match(r"^\d+(\.\d+)+", tag), f"{name}: {image} is not pinned"
    dockerfile = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^FROM (\S+)", dockerfile, re.M)
    assert base and re.search(r":\d+\.\d+\.\d+", base.group(1))


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_long_running_services_have_health_checks(name: str) -> None:
    check = SERVICES[name]["healthcheck"]
    assert check["test"] and check["interval"] and check["retries"]


def test_airflow_talks_to_the_fillpdf_service_on_its_own_database() -> None:
    conn = json.loads(SERVICES["airflow-worker-1"]["environment"]["AIRFLOW_CONN_FILLPDF_DEFAULT"])
    assert conn["conn_type"] == "fillpdf" and conn["host"] == "http://fillpdf:8000"
    assert conn["password"] == "${FILLPDF_API_KEY}"
    assert "--port=8000" in SERVICES["fillpdf"]["command"]
    url = SERVICES["fillpdf"]["environment"]["FILLPDF_DATABASE_URL"]
    assert url.startswith("postgresql+psycopg://fillpdf:") and url.endswith(
        "@postgres:5432/fillpdf"
    )
    init = (ROOT / "deploy/postgres/create-fillpdf-db.sh").read_text()
    assert "CREATE DATABASE fillpdf" in init
    depends = SERVICES["fillpdf"]["depends_on"]
    assert depends["fillpdf-init"]["condition"] == "service_completed_successfully"


def test_no_secret_is_written_in_the_file() -> None:
    text = (ROOT / "docker-compose.yaml").read_text()
    variables = set(re.findall(r"(?<!\$)\$\{([A-Z_]+)\}", text))
    example = (ROOT / ".env.example").read_text()
    defined = set(re.findall(r"^([A-Z_]+)=", example, re.M))
    assert variables <= defined, f"not in .env.example: {variables - defined}"
    for secret in (
        "POSTGRES_PASSWORD",
        "FILLPDF_DB_PASSWORD",
        "AIRFLOW_JWT_SECRET",
        "FILLPDF_API_KEY",
        "FILLPDF_SIGNING_KEY",
        "AIRFLOW_ADMIN_PASSWORD",
    ):
        assert secret in variables
    assert not re.search(r"fpk_[0-9a-f]{16}_", text)
    assert not re.search(r"(?i)password[\"']?\s*[:=]\s*[\"']?(?!\$\{)[A-Za-z0-9]", text)


def test_every_mounted_path_exists() -> None:
    mounts = []
    for service in SERVICES.values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith((".", "/")):
                mounts.append(source)
    assert {"./dags", "./include"} <= set(mounts)
    # the provider is installed in the image; plugins/ as Airflow's plugins folder would put
    # quality/operator.py etc. beside the standard library's modules
    assert "./plugins" not in mounts
    for source in mounts:
        assert (ROOT / source).exists(), source


def test_every_airflow_process_shares_the_keys_and_writes_to_the_s3_store() -> None:
    env = SERVICES["airflow-worker-2"]["environment"]
    for name in ("AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__API__SECRET_KEY",
                 "AIRFLOW__API_AUTH__JWT_SECRET"):  # fmt: skip
        for service in ("airflow-apiserver", "airflow-scheduler", "airflow-worker-1"):
            assert SERVICES[service]["environment"][name] == env[name]
        assert env[name].startswith("${")
    aws = json.loads(env["AIRFLOW_CONN_AWS_DEFAULT"])
    assert aws["extra"]["endpoint_url"] == "http://s3:5000"
    assert env["FILLPDF_MAIL_MERGE_OUTPUT"].startswith("s3://fillpdf/")
    assert 'Bucket="fillpdf"' in " ".join(SERVICES["s3-init"]["command"])


def test_the_image_installs_this_repository() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY" in dockerfile and "plugins" in dockerfile
    assert re.search(r"pip install .*?/opt/fillpdf\[s3,celery\]", dockerfile)
    version = re.search(r'apache-airflow==(\S+)"', dockerfile)
    import airflow

    assert version and version.group(1) == airflow.__version__
