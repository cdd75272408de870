"""The review editor in Airflow under an auth manager with rules per connection.

``airflow api-server`` runs with ``kits.authkit.OneConnectionAuthManager``: user ``team_a``
(role op) may reach connection ``fillpdf_team_a`` and not ``fillpdf_team_b``, two connections
to the embedded engine, each with a conversion in its own store. The editor's routes must
name their connection the way Airflow's connection check reads it, so the rule applies; and
an id no conversion has is refused before it reaches a store, with no store path said.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from fillpdf_provider.embedded import EmbeddedFillPdf
from kits.airflowkit import ApiServer, User, prepare_home, start_api_server
from kits.authkit import DOTTED_PATH, RULES_VARIABLE
from kits.servicekit import flat_form

ROOT = Path(__file__).resolve().parents[2]
TEAM_A = User("team_a", "op", "team-a-pass-51d0")


@dataclass
class Stack:
    api: ApiServer
    stores: dict[str, Path]
    conversions: dict[str, str]

    def url(self, conn_id: str, conversion_id: str | None = None) -> str:
        cid = conversion_id or self.conversions[conn_id]
        return f"{self.api.base_url}/fillpdf/review/{conn_id}/{cid}/"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    started = time.monotonic()
    root = tmp_path_factory.mktemp("review-connections")
    stores, conversions, connections = {}, {}, {}
    for conn_id in ("fillpdf_team_a", "fillpdf_team_b"):
        stores[conn_id] = root / f"{conn_id}-store"
        conversions[conn_id] = EmbeddedFillPdf(stores[conn_id]).convert(flat_form(1)).conversion_id
        extra = {"mode": "embedded", "conversions_uri": str(stores[conn_id])}
        connections[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(
            {"conn_type": "fillpdf", "extra": extra}
        )
    env = prepare_home(
        root / "airflow",
        [TEAM_A],
        {
            "AIRFLOW__CORE__AUTH_MANAGER": DOTTED_PATH,
            "PYTHONPATH": str(ROOT),
            RULES_VARIABLE: json.dumps({TEAM_A.name: ["fillpdf_team_a"]}),
            **connections,
        },
    )
    api = start_api_server(env)
    try:
        print(f"\nreview stack up in {time.monotonic() - started:.1f} s: {api.base_url}")
        yield Stack(api, stores, conversions)
    finally:
        api.stop()


@pytest.fixture(scope="module")
def team_a(stack: Stack) -> dict[str, str]:
    return {"Authorization": f"Bearer {stack.api.token(TEAM_A)}"}


def test_a_user_allowed_one_connection_reviews_it_and_not_another(
    stack: Stack, team_a: dict[str, str]
) -> None:
    with httpx.Client(headers=team_a, timeout=60) as http:
        mine = http.get(stack.url("fillpdf_team_a") + "api/review")
        assert mine.status_code == 200, mine.text
        page = http.get(stack.url("fillpdf_team_a"))
        assert page.status_code == 200 and "fillpdf_team_a" in page.text

        theirs = stack.url("fillpdf_team_b")
        for answer in (http.get(theirs), http.get(theirs + "api/review")):
            assert answer.status_code == 403, answer.text
        schema = (
            EmbeddedFillPdf(stack.stores["fillpdf_team_b"])
            .get_conversion(stack.conversions["fillpdf_team_b"])
            .schema
        )
        save = {"schema": [f.to_dict() for f in schema], "build": False}
        assert http.post(theirs + "api/save", json=save).status_code == 403
        assert not (stack.stores["fillpdf_team_b"] / "reviewed").exists()

        saved = http.post(stack.url("fillpdf_team_a") + "api/save", json=save)
        assert saved.status_code == 200, saved.text
    assert (stack.stores["fillpdf_team_a"] / "reviewed").is_dir()


@pytest.mark.parametrize(
    "conversion_id",
    ["conv_" + "\u0661\u0662\u0663", "conv_" + "7" * 5000, "conv_abc-def", "conv_" + "0" * 24],
    ids=["arabic-indic-digits", "5000-characters", "punctuation", "no-such-conversion"],
)
def test_a_conversion_id_is_ascii_and_bounded_and_errors_name_no_store(
    stack: Stack, team_a: dict[str, str], conversion_id: str
) -> None:
    url = stack.url("fillpdf_team_a", conversion_id) + "api/review"
    answer = httpx.get(url, headers=team_a, timeout=60)
    assert answer.status_code == 404, answer.text
    assert "default-src" in answer.headers.get("content-security-policy", "")  # refusals too
    assert answer.headers.get("x-frame-options") == "DENY"
    store = stack.stores["fillpdf_team_a"]
    assert str(store) not in answer.text and store.name not in answer.text, answer.text
    assert len(answer.text) < 1000, answer.text
    assert not list(store.glob(f"{conversion_id[:40]}*"))


def test_the_embedded_store_takes_only_ascii_ids_of_bounded_length(tmp_path: Path) -> None:
    from fillpdf_provider.client import NotFound

    engine = EmbeddedFillPdf(tmp_path / "store")
    made = engine.convert(flat_form(1)).conversion_id
    assert engine.get_conversion(made).conversion_id == made
    for bad in ("conv_\u0661\u0662\u0663", "conv_" + "7" * 5000, "conv_\uff11\uff12", "conv_"):
        with pytest.raises(NotFound) as refused:
            engine.get_conversion(bad)
        assert str(tmp_path) not in str(refused.value) and len(str(refused.value)) < 300
        with pytest.raises(NotFound):
            engine.save_reviewed(bad, ".schema.json", b"[]")
    assert not (tmp_path / "store" / "reviewed").exists()
