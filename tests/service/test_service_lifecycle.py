"""What happens over time and from the operator's side: 24-hour retention and the sweeper,
keys made and revoked with the ``fillpdf keys`` command, and unexpected errors."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from fillpdf_provider.service import Settings, create_app
from fillpdf_provider.service.callers import TTL_S
from fillpdf_provider.service.errors import ApiError
from kits.servicekit import Server, flat_form

DAY = 24 * 3600


def test_conversions_expire_after_24_hours_and_the_sweeper_deletes_them(server: Server) -> None:
    key = server.create_key("pro")
    with server.client(key) as client:
        result = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(1))}).json()
        cid = result["conversion_id"]
        stored = server.data_dir / "files" / f"{cid}.pdf"
        assert stored.exists()
        with server.clock_shifted(DAY - 120):  # still inside its 24 hours
            assert client.get(f"/v1/conversions/{cid}").status_code == 200
            assert httpx.get(result["document_url"]).status_code == 200
        with server.clock_shifted(DAY + 1):
            for response in (
                client.get(f"/v1/conversions/{cid}"),
                client.post("/v1/fill", json={"conversion_id": cid, "values": {}}),
                httpx.get(result["document_url"]),
            ):
                assert response.status_code == 410, response.text
                assert response.json()["error"]["type"] == "expired"
            deadline = time.monotonic() + 30  # the sweeper runs every 0.5 s
            while stored.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not stored.exists(), "the sweeper did not delete the expired file"
        # Back on the real clock the conversion stays gone: a tombstone, not a 404
        gone = client.get(f"/v1/conversions/{cid}")
        assert gone.status_code == 410
        assert client.get("/v1/account").json()["pages_used"] == 1


def test_idempotent_replies_are_kept_24_hours(server: Server) -> None:
    key = server.create_key("pro")
    files = {"file": ("f.pdf", flat_form(1))}
    with server.client(key) as client:
        first = client.post("/v1/convert", files=files, headers={"Idempotency-Key": "k"})
        with server.clock_shifted(DAY + 60):
            again = client.post("/v1/convert", files=files, headers={"Idempotency-Key": "k"})
        assert again.json()["conversion_id"] != first.json()["conversion_id"]
        assert client.get("/v1/account").json()["pages_used"] == 2


def run_cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    store = ["--data-dir", str(server.data_dir), "--database-url", server.database_url]
    command = [sys.executable, "-m", "fillpdf_provider.cli", "keys", *args, *store]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_keys_command_creates_lists_and_revokes(server: Server) -> None:
    made = run_cli(server, "create", "--plan", "scale")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("fpk_") and " " not in key
    key_id = key.split("_")[1]
    with server.client(key) as client:
        assert client.get("/v1/account").json()["plan"] == "scale"
    listed = run_cli(server, "list")
    assert key_id in listed.stdout and key not in listed.stdout
    revoked = run_cli(server, "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    revoked_at = time.monotonic()
    with server.client(key) as client:
        # A server process trusts a key it checked for up to a second, then asks again
        while True:
            started = time.monotonic()
            status = client.get("/v1/account").status_code
            if status == 401:
                break
            assert status == 200 and started < revoked_at + TTL_S
            time.sleep(0.05)
    again = run_cli(server, "revoke", key_id)
    assert again.returncode == 1 and "No live key" in again.stderr


def test_keys_command_refuses_an_unknown_plan(server: Server) -> None:
    result = run_cli(server, "create", "--plan", "platinum")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_an_unexpected_error_is_a_500_with_the_request_id(tmp_path) -> None:
    from fastapi.testclient import TestClient

    app = create_app(Settings(data_dir=tmp_path))

    @app.get("/v1/boom")
    async def boom() -> None:
        raise RuntimeError("a bug")

    @app.get("/v1/refused")
    async def refused() -> None:
        raise ApiError("forbidden", "No entry for this caller today.")

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/v1/boom")
        assert response.status_code == 500
        error = response.json()["error"]
        assert error["type"] == "api_error"
        assert response.headers["x-request-id"] in error["message"]
        assert "RuntimeError" not in response.text and "Traceback" not in response.text
        assert client.get("/v1/refused").status_code == 403
        assert client.get("/v1/openapi.json").status_code == 200  # still serving


@pytest.mark.parametrize("flag", ["--data-dir"])
def test_serve_needs_a_data_dir(flag: str) -> None:
    result = subprocess.run([sys.executable, "-m", "fillpdf_provider.cli", "serve"],
                            capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert result.returncode == 1 and flag in result.stderr
