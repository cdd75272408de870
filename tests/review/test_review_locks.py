"""The locks on ``fillpdf review``: where its token is taken, which address and origin it
answers, the headers on every answer, and how the browser is given the address.

Each runs the installed command as a person does and talks to it over HTTP, the way another
program on the machine (or a page in the person's browser) would.
"""

from __future__ import annotations

import json
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kits.browserkit import chromium
from kits.flatkit import flat_form_schema
from kits.reviewkit import Review, review

#: Long enough for a loaded machine; a guard against a hang, not a measure.
DEADLINE = 60.0
HEADERS = ("content-security-policy", "x-content-type-options", "x-frame-options")


@pytest.fixture
def started(flat: Path, tmp_path: Path) -> Iterator[Review]:
    schema = tmp_path / "start.json"
    schema.write_text(json.dumps(flat_form_schema()))
    with review(flat, "--schema", schema, "--out", tmp_path / "out" / "form.schema.json") as run:
        yield run


def _save() -> dict[str, Any]:
    return {"schema": flat_form_schema(), "build": True}


def test_the_token_in_the_address_opens_only_the_page_and_its_pictures(started: Review) -> None:
    token = {"token": started.token}
    with httpx.Client(base_url=started.base, timeout=60) as http:
        assert http.get("/", params=token).status_code == 200
        assert http.get("/pages/0.png", params=token).status_code == 200
        refused = http.get("/api/review", params=token)
        assert refused.status_code == 403 and "token" in refused.json()["error"]["message"]
        assert http.post("/api/save", params=token, json=_save()).status_code == 403
        assert not started.schema_path.exists() and not started.pdf_path.exists()
        # the same requests with the token in the header the page's script sends
        header = {"X-Review-Token": started.token}
        assert http.get("/api/review", headers=header).status_code == 200
        assert http.post("/api/save", headers=header, json=_save()).status_code == 200
    assert started.schema_path.is_file() and started.pdf_path.is_file()


def test_another_host_name_or_a_write_from_another_origin_is_refused(started: Review) -> None:
    header = {"X-Review-Token": started.token}
    port = started.base.rsplit(":", 1)[1]
    with httpx.Client(base_url=started.base, timeout=60) as http:
        # a name that resolves to this machine (DNS rebinding) is not the address it bound
        for host in (f"localhost:{port}", f"attacker.example:{port}", "127.0.0.1"):
            answer = http.get("/api/review", headers={**header, "Host": host})
            assert answer.status_code == 403, (host, answer.text)
            assert f"http://127.0.0.1:{port}/" in answer.json()["error"]["message"]
            assert all(name in answer.headers for name in HEADERS)
        elsewhere = {**header, "Origin": "http://attacker.example"}
        for origin in ("http://attacker.example", f"http://localhost:{port}", "null"):
            answer = http.post("/api/save", headers={**header, "Origin": origin}, json=_save())
            assert answer.status_code == 403, (origin, answer.text)
            assert "own page" in answer.json()["error"]["message"]
        assert not started.schema_path.exists()
        # reading from another origin is left to the browser's same-origin rule and the token
        assert http.get("/api/review", headers=elsewhere).status_code == 200
        own = {**header, "Origin": started.base}
        assert http.post("/api/save", headers=own, json=_save()).status_code == 200
    assert started.schema_path.is_file()


def test_every_answer_carries_the_security_headers(started: Review) -> None:
    header = {"X-Review-Token": started.token}
    with httpx.Client(base_url=started.base, timeout=60) as http:
        answers = {
            404: http.get("/no-such-page", headers=header),
            405: http.delete("/api/save", headers=header),
            422: http.get("/pages/first.png", headers=header),
            403: http.get("/api/review"),
            415: http.post("/api/save", headers=header, data={"schema": "[]"}),
        }
        not_a_page = http.get("/pages/9.png", headers=header)
    assert not_a_page.status_code == 404
    for status, answer in {**answers, 0: not_a_page}.items():
        assert status in (0, answer.status_code), (status, answer.status_code, answer.text)
        for name in HEADERS:
            assert name in answer.headers, (status, name, dict(answer.headers))
        assert "default-src 'none'" in answer.headers["content-security-policy"]
        assert answer.json()["error"]["message"], (status, answer.text)


def _recording_browser(folder: Path) -> tuple[str, Path]:
    """A stand-in browser command (as ``$BROWSER`` takes one) that writes its arguments."""
    record = folder / "browser-argv.json"
    script = folder / "browser.py"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    script.chmod(0o700)
    return str(script), record


def test_the_browser_is_given_a_private_file_that_forwards_not_the_token(
    flat: Path, tmp_path: Path
) -> None:
    """Another user can read a process's arguments, not a file of this user's mode 0600."""
    command, record = _recording_browser(tmp_path)
    with review(flat, browser=command) as run:
        deadline = time.monotonic() + DEADLINE
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # polled until the deadline: the browser is started after the print
        argv = json.loads(record.read_text())
        assert len(argv) == 1 and run.token not in argv[0], argv
        opener = Path(httpx.URL(argv[0]).path)
        assert argv[0].startswith("file://") and opener.is_file()
        assert stat.S_IMODE(opener.stat().st_mode) == 0o600
        assert run.url in opener.read_text().replace("&amp;", "&")

        with chromium() as browser:
            page = browser.new_page()
            page.set_default_timeout(60_000)  # a guard against a hang, not a measure
            page.goto(argv[0])
            page.locator('body[data-ready="true"]').wait_for()
            assert page.url == run.url
            assert page.locator("[data-field]").count() > 0
    assert not opener.exists()  # removed when the editor stops
