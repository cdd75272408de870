"""A real S3-compatible server for tests: moto's server mode on a free loopback port.

Object-storage paths go through Airflow's ``aws_default`` connection, s3fs and botocore to a
process that speaks the S3 protocol over HTTP, the way they go to any S3-compatible store.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from kits.servicekit import raise_if_port_taken, start_on_free_port

START_TIMEOUT = 60.0
MOTO_SERVER = os.path.join(os.path.dirname(sys.executable), "moto_server")
ACCESS_KEY = "fillpdf-test"
SECRET_KEY = "fillpdf-test-secret"
REGION = "us-east-1"


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen

    def connection(self) -> dict:
        """An Airflow ``aws`` connection to this server, as ``AIRFLOW_CONN_*`` JSON takes it."""
        return {
            "conn_type": "aws",
            "login": ACCESS_KEY,
            "password": SECRET_KEY,
            "extra": {"endpoint_url": self.endpoint, "region_name": REGION},
        }

    def connection_env(self) -> str:
        return json.dumps(self.connection())

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def get(self, bucket: str, key: str) -> bytes:
        return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=data)

    def delete(self, bucket: str, key: str) -> None:
        self.client().delete_object(Bucket=bucket, Key=key)


def _moto_on(port: int, log_dir: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """moto_server on ``port``, once it answers: its endpoint and process."""
    log_file = log_dir / "moto.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            [MOTO_SERVER, "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(int(START_TIMEOUT / 0.2)):
        if process.poll() is not None:
            raise_if_port_taken("moto_server", log_file.read_text())
            raise RuntimeError(f"moto_server exited: {log_file.read_text()}")
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(f"{endpoint}/moto-api/", timeout=2)
            return endpoint, process
        time.sleep(0.2)
    _stop(process)
    raise RuntimeError(f"moto_server did not answer on {endpoint}")


@contextlib.contextmanager
def s3_server(log_dir: Path) -> Iterator[S3Server]:
    endpoint, process = start_on_free_port(lambda port: _moto_on(port, log_dir))
    try:
        yield S3Server(endpoint, process)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
