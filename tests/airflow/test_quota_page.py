"""The "FillPDF quota" page in a real Airflow, in a real browser.

One module-wide set-up: a FillPDF service with a pro account (connection ``fillpdf_pro``)
that has converted a 3-page form, an embedded-engine connection in Airflow's database that
has converted 2 pages, a connection to a service that is down, no ``fillpdf_default``
connection although the embedded engine's default store holds a 3-page conversion, and
``airflow api-server`` on 127.0.0.1 with the plugin (from its entry point) and the simple auth
manager's users ``ops`` (role op: may read connections) and ``viewer`` (may not). A person
then signs in on Airflow's own login page in headless Chromium (Debian's package, driven by
Playwright) and reads the numbers off the page. Without credentials, the page and its JSON
are refused with how to authenticate, and the way they name works.
"""

from __future__ import annotations

import html
import json
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from fillpdf_provider.embedded import EmbeddedFillPdf
from kits.airflowkit import ApiServer, User, prepare_home, run_airflow, start_api_server
from kits.browserkit import chromium
from kits.servicekit import Server, flat_form, start_server

OPS = User("ops", "op", "ops-pass-4c1f")
VIEWER = User("viewer", "viewer", "viewer-pass-9e2b")
PAGE = "/fillpdf/quota"


@dataclass
class Stack:
    api: ApiServer
    service: Server
    key: str
    local_store: Path

    def account(self) -> dict[str, Any]:
        with self.service.client(self.key) as client:
            answer = client.get("/v1/account")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    started = time.monotonic()
    root = tmp_path_factory.mktemp("quota-page")
    service = start_server(root / "service")
    # The offline connection's port: bound and never listening, so it refuses every connection
    # for the whole module and nothing else on the machine can take it meanwhile.
    offline = socket.socket()
    offline.bind(("127.0.0.1", 0))
    api = None
    try:
        key = service.create_key("pro")
        with service.client(key) as client:
            converted = client.post(
                "/v1/convert", files={"file": ("form.pdf", flat_form(3), "application/pdf")}
            )
            assert converted.status_code == 200, converted.text
            assert client.get("/v1/account").json()["pages_used"] == 3

        local_store = root / "embedded-store"
        EmbeddedFillPdf(local_store).convert(flat_form(2))
        # What tasks without a connection left in the embedded engine's default store: no
        # account of fillpdf_default's, which does not exist.
        EmbeddedFillPdf(root / "airflow" / "fillpdf" / "conversions").convert(flat_form(3))

        env = prepare_home(
            root / "airflow",
            [OPS, VIEWER],
            {
                # Connections from the environment: the pro account and a service that is down.
                "AIRFLOW_CONN_FILLPDF_PRO": json.dumps(
                    {"conn_type": "fillpdf", "host": service.base_url, "password": key}
                ),
                "AIRFLOW_CONN_FILLPDF_OFFLINE": json.dumps(
                    {
                        "conn_type": "fillpdf",
                        "host": f"http://127.0.0.1:{offline.getsockname()[1]}",
                        "password": "fp_offline",
                    }
                ),
            },
        )
        # A connection in the metadata database: the embedded engine with its own store.
        run_airflow(
            [
                "connections", "add", "fillpdf_local", "--conn-type", "fillpdf",
                "--conn-extra",
                json.dumps({"mode": "embedded", "conversions_uri": str(local_store)}),
            ],
            env,
        )  # fmt: skip
        api = start_api_server(env)
        print(f"\nquota page stack up in {time.monotonic() - started:.1f} s: {api.base_url}")
        yield Stack(api, service, key, local_store)
    finally:
        if api is not None:
            api.stop()
        service.stop()
        offline.close()


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize("query", ["", "?format=json"])
def test_the_page_and_its_json_refuse_callers_without_credentials(stack: Stack, query: str) -> None:
    url = stack.api.base_url + PAGE + query
    for headers in ({}, {"Accept": "application/json"}):
        answer = httpx.get(url, headers=headers, timeout=30)
        assert answer.status_code == 401, answer.text
        assert answer.headers["content-type"].startswith("application/json")
        assert "pages_used" not in answer.text
        assert stack.service.base_url not in answer.text

        detail = answer.json()["detail"]
        assert detail.startswith("Not authenticated. Sign in to Airflow in a browser"), detail
        assert '"Authorization: Bearer <access_token>"' in detail, detail

    forged = httpx.get(url, headers={"Authorization": "Bearer not.a.jwt"}, timeout=30)
    assert forged.status_code in (401, 403), forged.text
    assert "pages_used" not in forged.text
    cookie = httpx.get(url, cookies={"_token": "forged"}, timeout=30)
    assert cookie.status_code in (401, 403), cookie.text
    assert "pages_used" not in cookie.text


def test_the_401_says_how_to_authenticate_and_that_way_works(stack: Stack) -> None:
    """A script's author follows the refusal's words: the token endpoint it names, the body
    it shows, the header it names; and a person learns where the password is."""
    url = stack.api.base_url + PAGE + "?format=json"
    detail = httpx.get(url, timeout=30).json()["detail"]
    assert "/auth/login?next=" in detail, detail
    assert "$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated" in detail, detail
    assert "airflow api-server prints the password" in detail, detail
    token_url = re.search(r"POST (/\S+) with the JSON", detail)
    assert token_url, detail
    answer = httpx.post(
        stack.api.base_url + token_url.group(1),
        json={"username": OPS.name, "password": OPS.password},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    header = re.search(r'"(Authorization): Bearer <access_token>"', detail)
    assert header, detail
    token = answer.json()["access_token"]
    page = httpx.get(url, headers={header.group(1): f"Bearer {token}"}, timeout=60)
    assert page.status_code == 200, page.text
    assert {row["conn_id"] for row in page.json()["connections"]} >= {"fillpdf_pro"}


def test_a_browser_without_a_login_is_sent_to_the_sign_in_page(stack: Stack) -> None:
    html_accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    answer = httpx.get(stack.api.base_url + PAGE, headers={"Accept": html_accept}, timeout=30)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/auth/login?next=")
    assert "%2Ffillpdf%2Fquota" in answer.headers["location"]
    assert "pages_used" not in answer.text


def test_users_who_may_not_read_connections_are_refused(stack: Stack) -> None:
    token = stack.api.token(VIEWER)
    url = stack.api.base_url + PAGE
    auth = {"Authorization": f"Bearer {token}"}
    as_json = httpx.get(url, params={"format": "json"}, headers=auth, timeout=30)
    assert as_json.status_code == 403, as_json.text
    as_page = httpx.get(url, headers={**auth, "Accept": "text/html"}, timeout=30)
    assert as_page.status_code == 403
    assert "permission to read connections" in as_page.text
    assert "pages_used" not in as_page.text and "3 of 60" not in as_page.text


def test_the_json_matches_the_account(stack: Stack) -> None:
    token = stack.api.token(OPS)
    answer = httpx.get(
        stack.api.base_url + PAGE,
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    rows = {row["conn_id"]: row for row in answer.json()["connections"]}
    assert set(rows) == {"fillpdf_pro", "fillpdf_local", "fillpdf_offline", "fillpdf_default"}
    account = stack.account()
    for name in ("plan", "pages_used", "pages_included", "pages_remaining", "overage_pages"):
        assert rows["fillpdf_pro"][name] == account[name], name
    assert rows["fillpdf_pro"]["resets_at"] == account["period_end"]
    assert rows["fillpdf_pro"]["configured"] and rows["fillpdf_pro"]["billed"]
    assert rows["fillpdf_local"]["plan"] == "embedded"
    assert rows["fillpdf_local"]["pages_used"] == 2
    assert rows["fillpdf_local"]["billed"] is False
    assert rows["fillpdf_local"]["conversions_kept_in"] == str(stack.local_store)
    assert rows["fillpdf_offline"]["error"]
    # No such connection: no account and no numbers (the default store's 3 pages are no
    # account's), only that it is not configured.
    assert rows["fillpdf_default"]["configured"] is False
    assert "pages_used" not in rows["fillpdf_default"]


# --------------------------------------------------------------------------- in Chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def _field(page: Any, conn_id: str, field: str) -> str:
    return str(page.locator(f'[data-conn="{conn_id}"] dd[data-field="{field}"]').inner_text())


def _assert_looks_rendered(png: Path) -> None:
    from PIL import Image

    with Image.open(png) as image:
        assert image.width >= 800 and image.height >= 400
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "the screenshot is (nearly) blank"


def test_the_page_in_chromium_shows_the_accounts_numbers(
    browser: Any, stack: Stack, tmp_path: Path
) -> None:
    base = stack.api.base_url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)  # a guard against a hang, not a measure

        # A person opens the page by its address, is sent to Airflow's sign-in page, signs in,
        # and comes back to the page.
        page.goto(base + PAGE)
        page.wait_for_url(lambda url: "/auth/login" in url)
        page.get_by_label("Username").fill(OPS.name)
        page.get_by_label("Password").fill(OPS.password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: httpx.URL(url).path == PAGE)
        page.locator('[data-conn="fillpdf_pro"]').wait_for()

        account = stack.account()
        assert account["pages_used"] == 3
        assert _field(page, "fillpdf_pro", "plan") == account["plan"] == "pro"
        assert _field(page, "fillpdf_pro", "pages_used") == (
            f"{account['pages_used']:,} of {account['pages_included']:,}"
        )
        assert _field(page, "fillpdf_pro", "remaining") == f"{account['pages_remaining']:,}"
        overage = _field(page, "fillpdf_pro", "overage_so_far")
        assert overage == f"{account['overage_pages']} pages, ${account['overage_cost_usd']:,.2f}"
        assert _field(page, "fillpdf_pro", "resets") == account["period_end"]
        assert _field(page, "fillpdf_pro", "rate_limit") == (
            f"{account['rate_limit_per_minute']} / min"
        )
        assert _field(page, "fillpdf_pro", "service") == stack.service.base_url
        bar = page.locator('[data-conn="fillpdf_pro"] [role="progressbar"]')
        assert bar.get_attribute("aria-valuenow") == str(account["pages_used"])
        assert bar.get_attribute("aria-valuemax") == str(account["pages_included"])

        assert _field(page, "fillpdf_local", "plan") == (
            "embedded: no plan, no quota, nothing billed"
        )
        assert _field(page, "fillpdf_local", "pages_converted") == "2 pages (not billed)"
        assert _field(page, "fillpdf_local", "conversions_kept_in") == str(stack.local_store)
        assert _field(page, "fillpdf_local", "service") == "embedded engine"
        local = page.locator('[data-conn="fillpdf_local"]').inner_text()
        assert "Pages used" not in local and "Overage" not in local
        offline = page.locator('[data-conn="fillpdf_offline"] .error').inner_text()
        assert re.search(r"no answer", offline, re.IGNORECASE), offline

        # The default connection does not exist: said so, with what to do, and no numbers.
        default = page.locator('[data-conn="fillpdf_default"]').inner_text()
        assert "fillpdf_default (not configured)" in default, default
        assert "add a connection fillpdf_default of type FillPDF" in default, default
        assert not re.search(r"\d", default.replace("fillpdf_default", "")), default
        # Nothing was billed through Airflow, and the runs table says it lists billed runs.
        runs = page.locator("table").inner_text()
        assert "No billed conversion runs yet." in runs, runs
        assert page.get_by_role("heading", name="Recent billed conversion runs").is_visible()

        shot = tmp_path / "fillpdf-quota-page.png"
        page.screenshot(path=str(shot), full_page=True)
        _assert_looks_rendered(shot)
        print(f"\nscreenshot of the quota page: {shot}")

        # The same page from Airflow's navigation: Browse -> FillPDF quota, shown in a frame.
        page.goto(base + "/")
        page.get_by_role("button", name="Browse").click()
        page.get_by_role("menuitem", name="FillPDF quota").click()
        page.wait_for_url(lambda url: httpx.URL(url).path == "/plugin/fillpdf-quota")
        frame = page.frame_locator("iframe")
        used = frame.locator('[data-conn="fillpdf_pro"] dd[data-field="pages_used"]')
        assert used.inner_text() == f"{account['pages_used']} of {account['pages_included']}"
        nav_shot = tmp_path / "fillpdf-quota-in-airflow.png"
        page.screenshot(path=str(nav_shot))
        _assert_looks_rendered(nav_shot)
        print(f"screenshot of the page in Airflow's navigation: {nav_shot}")
    finally:
        context.close()


# --------------------------------------------------------------------------- review


def _review_url(stack: Stack) -> tuple[str, str]:
    (conversion,) = EmbeddedFillPdf(stack.local_store).recent_conversions()
    cid = conversion["conversion_id"]
    return cid, f"{stack.api.base_url}/fillpdf/review/fillpdf_local/{cid}/"


def test_the_review_editor_needs_airflow_permissions(stack: Stack) -> None:
    cid, url = _review_url(stack)
    schema = EmbeddedFillPdf(stack.local_store).get_conversion(cid).schema
    save = {"schema": [f.to_dict() for f in schema], "build": False}
    assert httpx.get(url + "api/review", timeout=30).status_code == 401
    assert httpx.post(url + "api/save", json=save, timeout=30).status_code == 401
    viewer = {"Authorization": f"Bearer {stack.api.token(VIEWER)}"}
    assert httpx.get(url + "api/review", headers=viewer, timeout=30).status_code == 403
    assert httpx.post(url + "api/save", json=save, headers=viewer, timeout=30).status_code == 403
    assert not (stack.local_store / "reviewed").exists()
    ops = {"Authorization": f"Bearer {stack.api.token(OPS)}"}
    document = httpx.get(url + "api/review", headers=ops, timeout=60)
    assert document.status_code == 200, document.text
    assert [e["name"] for e in document.json()["schema"]] == [f.name for f in schema]
    missing = httpx.get(url.replace(cid, "conv_0000") + "api/review", headers=ops, timeout=30)
    assert missing.status_code == 404 and "conv_0000" in missing.text
    service = httpx.get(
        url.replace("fillpdf_local", "fillpdf_pro") + "api/review", headers=ops, timeout=30
    )
    assert service.status_code == 404 and "fillpdf review" in service.text


def test_a_conversion_is_reviewed_in_airflow_and_saved_where_convert_reads_it(
    browser: Any, stack: Stack
) -> None:
    """From the FillPDF page's Review link, a person renames a field and saves: the schema
    lands in the store's reviewed/ folder, and ConvertOperator(schema=...) builds from it."""
    from fillpdf_provider.operators import ConvertOperator

    cid, url = _review_url(stack)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)  # a guard against a hang, not a measure
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.goto(stack.api.base_url + PAGE)
        page.wait_for_url(lambda url: "/auth/login" in url)
        page.get_by_label("Username").fill(OPS.name)
        page.get_by_label("Password").fill(OPS.password)
        page.get_by_role("button", name="Sign in").click()
        link = page.locator(f'[data-conn="fillpdf_local"] [data-conversion="{cid}"] [data-review]')
        link.click()
        page.wait_for_url(url)
        page.locator('body[data-ready="true"]').wait_for()
        page.locator('[data-field="email"]').click()
        page.locator('[data-prop="name"]').fill("contact_email")
        page.locator('[data-prop="name"]').press("Enter")
        page.locator('[data-action="build"]').click()
        page.locator("[data-status]", has_text=re.compile("^Saved")).wait_for()
        assert problems == []
    finally:
        context.close()

    saved = stack.local_store / "reviewed" / f"{cid}.schema.json"
    names = [e["name"] for e in json.loads(saved.read_text())]
    assert "contact_email" in names and "email" not in names
    assert (stack.local_store / "reviewed" / f"{cid}.fillable.pdf").is_file()
    source = stack.local_store.parent / "review-source.pdf"
    source.write_bytes(flat_form(2))
    operator = ConvertOperator(task_id="c", pdfs=str(source), output_dir=str(source.parent / "o"),
                               schema=str(saved))  # fmt: skip
    (result,) = operator.execute(context={})  # type: ignore[arg-type]
    assert [e["name"] for e in result["schema"]] == names


# --------------------------------------------------------------------------- rendering, fast

JUNE = ("2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z")
MID_JUNE = 1_750_032_000.0  # 2025-06-16T00:00:00Z: half of a 30-day month gone


PLANS = {  # pages included, overage rate, hard stop
    "developer": (25, None, True),
    "pro": (60, 0.90, False),
    "enterprise": (None, None, False),
}


def _account(plan: str, used: int) -> Any:
    """The account the service would answer: its arithmetic is ``Account.of_usage``'s."""
    from fillpdf_provider.account import Account

    included, rate, hard_stop = PLANS[plan]
    return Account.of_usage(
        plan=plan,
        pages_used=used,
        pages_included=included,
        overage_rate_usd=rate,
        max_pages_per_file=10,
        rate_limit_per_minute=10,
        hard_stop=hard_stop,
        period_start=JUNE[0],
        period_end=JUNE[1],
    )


def _page(rows: list[dict[str, Any]]) -> str:
    from fillpdf_provider.ui.quota_page import render

    return render({"generated_at": "2025-06-16T00:00:00Z", "connections": rows, "recent_runs": []})


def _rendered(plan: str, used: int) -> tuple[dict, dict]:
    """The account row and the page's fields for one account, without Airflow or a browser."""
    from fillpdf_provider.ui.quota_data import account_fields

    row = {
        "conn_id": "fillpdf_pro",
        "configured": True,
        "mode": "api",
        "base_url": "https://fillpdf.example.com",
        **account_fields(_account(plan, used), MID_JUNE, billed=True),
    }
    fields = dict(re.findall(r'<dd data-field="(\w+)">(.*?)</dd>', _page([row])))
    return row, {k: html.unescape(v) for k, v in fields.items()}


def test_a_hard_stop_plan_is_never_projected_past_its_quota() -> None:
    # 15 of 25 pages in half the month: 30 at this rate, but the developer plan stops at 25.
    row, fields = _rendered("developer", 15)
    assert row["projected_pages"] == 25
    assert row["quota_runs_out_at"] == "2025-06-26T00:00:00Z"  # 25 pages at 1 a day
    assert fields["pages_used"] == "15 of 25"
    assert fields["projected_at_month_end"] == (
        "At this rate the quota runs out on 2025-06-26; after that, conversions are refused "
        "until 2025-07-01 00:00 UTC."
    )
    assert "30" not in fields["projected_at_month_end"]
    assert fields["projected_overage_cost"] == "none: the plan stops at its quota"


def test_a_hard_stop_plan_whose_quota_is_used_up() -> None:
    row, fields = _rendered("developer", 25)
    assert row["projected_pages"] == 25
    assert row["quota_runs_out_at"] == "2025-06-16T00:00:00Z"
    assert fields["projected_at_month_end"] == (
        "The quota is used up; conversions are refused until 2025-07-01 00:00 UTC."
    )


def test_a_hard_stop_plan_that_lasts_the_month() -> None:
    row, fields = _rendered("developer", 5)
    assert row["projected_pages"] == 10 and row["quota_runs_out_at"] is None
    assert fields["projected_at_month_end"] == "10 of 25"


def test_a_plan_with_overage_is_projected_past_its_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    # pro: 40 of 60 in half the month, 80 at month end, 20 pages of overage at $0.90.
    row, fields = _rendered("pro", 40)
    assert row["projected_pages"] == 80 and row["quota_runs_out_at"] is None
    assert fields["projected_at_month_end"] == "80"
    assert fields["projected_overage_cost"] == "$18.00"


def test_overage_is_said_in_words_a_person_reads() -> None:
    # A plan that stops at its quota never has overage: said so, not "0 pages, —".
    _, fields = _rendered("developer", 15)
    assert fields["overage_so_far"] == "none: the plan stops at its quota"
    # A plan with overage: its pages and what they cost so far, $0.00 when there are none.
    _, fields = _rendered("pro", 40)
    assert fields["overage_so_far"] == "0 pages, $0.00"
    _, fields = _rendered("pro", 61)
    assert fields["overage_so_far"] == "1 page, $0.90"
    _, fields = _rendered("pro", 70)
    assert fields["overage_so_far"] == "10 pages, $9.00"
    # A plan without a page quota has nothing to go over.
    _, fields = _rendered("enterprise", 500)
    assert (
        fields["overage_so_far"]
        == fields["projected_overage_cost"]
        == ("none: the plan has no page quota")
    )
    assert fields["pages_used"] == "500"
    for values in (fields, _rendered("developer", 15)[1], _rendered("pro", 70)[1]):
        assert "—" not in values["overage_so_far"]


def test_an_embedded_card_and_the_billed_runs_do_not_contradict_each_other(
    tmp_path: Path,
) -> None:
    """Pages the embedded engine converted are not billed, so they are never shown as pages
    "used" of a plan beside a table of billed runs that has none of them."""
    from fillpdf_provider.ui.quota_data import account_fields, unconfigured_row

    engine = EmbeddedFillPdf(tmp_path / "store")
    engine.convert(flat_form(3))
    row = {
        "conn_id": "fillpdf_local",
        "configured": True,
        "mode": "embedded",
        "base_url": None,
        "conversions_kept_in": str(tmp_path / "store"),
        **account_fields(engine.get_account(), MID_JUNE, billed=engine.has_quota),
    }
    page = _page([row, unconfigured_row("fillpdf_default")])
    fields = dict(re.findall(r'<dd data-field="(\w+)">(.*?)</dd>', page))
    assert fields["pages_converted"] == "3 pages (not billed)"
    assert "pages_used" not in fields and "overage_so_far" not in fields
    assert "Recent billed conversion runs" in page
    assert "No billed conversion runs yet." in page
    assert 'fillpdf_default <span class="muted">(not configured)</span>' in page
