"""``fillpdf review``: the editor a person fixes a conversion in, driven in headless Chromium.

The command runs as a person runs it (the installed script, its printed address); the page
is used with the mouse and keys as its contract says (``data-field`` boxes, ``data-prop``
inputs, ``data-action`` buttons); what Save writes is read back and built again.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fillpdf_provider.engine import Template
from fillpdf_provider.engine.convert import convert
from kits.browserkit import chromium
from kits.flatkit import flat_form_schema
from kits.reviewkit import Review, review

#: flat_form(2)'s schema, a second checkbox beside "member", and "email" less sure.
START = [
    *flat_form_schema(),
    {"name": "newsletter", "type": "checkbox", "page": 0, "rect": [200, 539, 212, 551]},
]
next(e for e in START if e["name"] == "email")["confidence"] = 0.3
#: One pixel of the page pictures, in points (they are drawn at 1.5 px per point).
PIXEL = 1 / 1.5


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def started(flat: Path, tmp_path: Path) -> Iterator[Review]:
    schema = tmp_path / "start.json"
    schema.write_text(json.dumps(START))
    with review(flat, "--schema", schema, "--out", tmp_path / "out" / "form.schema.json") as run:
        yield run


class Person:
    """A browser tab on the editor, which records what a person should never meet: a
    script error, a refused resource, a request to another address."""

    def __init__(self, browser: Any, run: Review) -> None:
        self.context = browser.new_context(viewport={"width": 1500, "height": 1000})
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)  # a guard against a hang, not a measure
        self.problems: list[str] = []
        self.page.on("pageerror", lambda exc: self.problems.append(f"script: {exc}"))
        self.refused: list[tuple[int, str]] = []  # answers of 400 and up
        self.page.on("console", self._console)
        self.page.on(
            "response",
            lambda r: r.status >= 400 and self.refused.append((r.status, r.url.split("?")[0])),
        )
        self.page.on(
            "request",
            lambda r: r.url.startswith(run.base) or self.problems.append(f"elsewhere: {r.url}"),
        )
        self.page.goto(run.url)
        self.page.locator('body[data-ready="true"]').wait_for()

    def _console(self, message: Any) -> None:
        # a refused request is logged too: it is counted in ``refused``, by its answer
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.problems.append(f"console: {message.text}")

    def box(self, name: str, export: str | None = None) -> Any:
        selector = f'[data-field="{name}"]' + (f'[data-export="{export}"]' if export else "")
        return self.page.locator(selector)

    def click(self, name: str, export: str | None = None, *, shift: bool = False) -> None:
        self.box(name, export).click(modifiers=["Shift"] if shift else None)

    def drag(self, start: tuple[float, float], by: tuple[float, float]) -> None:
        mouse = self.page.mouse
        mouse.move(*start)
        mouse.down()
        mouse.move(start[0] + by[0] / 2, start[1] + by[1] / 2, steps=3)
        mouse.move(start[0] + by[0], start[1] + by[1], steps=3)
        mouse.up()

    def at_user(self, page: int, x: float, y: float) -> tuple[float, float]:
        """Where PDF point (x, y) of ``page`` is on the screen (rotation 0, 1.5 px/pt)."""
        sheet = self.page.locator(f'[data-page="{page}"]')
        sheet.scroll_into_view_if_needed()
        frame = sheet.bounding_box()
        assert frame is not None
        return frame["x"] + 1.5 * x, frame["y"] + frame["height"] - 1.5 * y

    def wait_for_status(self, start: str) -> None:
        """Wait for the status line to start with ``start`` (the page's policy forbids
        evaluating script text, so this waits on the element)."""
        wanted = re.compile("^" + re.escape(start))
        self.page.locator("[data-status]", has_text=wanted).wait_for()

    def status(self) -> str:
        return str(self.page.locator("[data-status]").inner_text())

    def close(self) -> None:
        self.context.close()


def saved(run: Review) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in json.loads(run.schema_path.read_text())}


def assert_rect(found: list[float], expected: list[float], slack: float = 0.0) -> None:
    assert found == pytest.approx(expected, abs=slack + 1e-6), (found, expected)


def test_a_person_fixes_a_form_and_the_saved_schema_builds_it(
    browser: Any, started: Review, flat: Path
) -> None:
    person = Person(browser, started)
    try:
        page = person.page
        assert person.box("full_name").count() == 1
        assert page.locator("[data-field]").count() == 10  # every widget, radio buttons too
        assert "low" in (person.box("email").get_attribute("class") or "")
        assert "30%" in person.box("email").inner_text()

        # rename: select, type the name, Enter
        person.click("email")
        page.locator('[data-prop="name"]').fill("email_address")
        page.locator('[data-prop="name"]').press("Enter")
        assert person.box("email_address").count() == 1 and person.box("email").count() == 0

        # move with the keys: 3 pt right, 10 pt down
        person.click("city")
        for key in ("ArrowRight", "ArrowRight", "ArrowRight", "Shift+ArrowDown"):
            page.keyboard.press(key)

        # resize with the mouse: the corner handle, 30 px right and 15 px down
        person.click("full_name")
        handle = person.box("full_name").locator('[data-handle="resize"]').bounding_box()
        person.drag((handle["x"] + 4, handle["y"] + 4), (30, 15))

        # move with the mouse: 15 px right
        frame = person.box("member").bounding_box()
        person.drag((frame["x"] + frame["width"] / 2, frame["y"] + frame["height"] / 2), (15, 0))

        # draw a new field, name it, make it a date with its format
        page.locator('[data-action="draw"]').click()
        person.drag(person.at_user(0, 150, 500), (225, 30))  # to (300, 480)
        page.locator('[data-prop="name"]').fill("notes")
        page.locator('[data-prop="name"]').press("Enter")
        page.locator('[data-prop="type"]').select_option("date")
        page.locator('[data-prop="date_format"]').fill("dd.mm.yyyy")
        page.locator('[data-prop="date_format"]').press("Enter")

        # group two checkboxes as one radio question
        person.click("member")
        person.click("newsletter", shift=True)
        page.locator('[data-prop="group"]').fill("contact_by")
        page.locator('[data-action="group"]').click()
        assert person.box("contact_by").count() == 2

        # delete with the key, undo, delete with the button
        person.click("country")
        page.keyboard.press("Delete")
        assert person.box("country").count() == 0
        page.keyboard.press("Control+z")
        assert person.box("country").count() == 1
        person.click("country")
        page.locator('[data-action="delete"]').click()
        assert person.box("country").count() == 0

        page.locator('[data-action="build"]').click()
        person.wait_for_status("Saved")
        assert "built" in person.status()
        assert person.problems == [] and person.refused == []
    finally:
        person.close()

    schema = saved(started)
    assert set(schema) == {
        "full_name", "email_address", "city", "contact_by", "plan", "size", "notes",
    }  # fmt: skip
    assert_rect(schema["email_address"]["rect"], [150, 615, 450, 635])
    assert_rect(schema["city"]["rect"], [153, 568, 453, 582])
    assert_rect(schema["full_name"]["rect"], [150, 645, 470, 675], slack=PIXEL)
    notes = schema["notes"]
    assert notes["type"] == "date" and notes["date_format"] == "dd.mm.yyyy"
    assert_rect(notes["rect"], [150, 480, 300, 500], slack=PIXEL)
    contact = schema["contact_by"]
    assert contact["type"] == "radio"
    exports = {w["export"]: w["rect"] for w in contact["widgets"]}
    assert set(exports) == {"member", "newsletter"}
    assert_rect(exports["member"], [81, 539, 93, 551], slack=PIXEL)
    assert_rect(exports["newsletter"], [200, 539, 212, 551])
    assert schema["plan"]["widgets"] == [
        {"export": "basic", "page": 0, "rect": [300, 539, 312, 551]},
        {"export": "gold", "page": 0, "rect": [360, 539, 372, 551]},
    ]

    # the saved schema builds exactly the PDF the editor built, with those fields
    built = started.pdf_path.read_bytes()
    again = convert(flat.read_bytes(), schema=json.loads(started.schema_path.read_text()))
    assert again.pdf == built
    form = Template(built)
    assert {f.name for f in form.fields} == set(schema)
    assert form.date_format("notes") == "dd.mm.yyyy"
    by_name = {f.name: f for f in form.fields}
    assert by_name["contact_by"].options == ("member", "newsletter")


def test_a_save_that_cant_build_names_the_field_and_writes_nothing(
    browser: Any, started: Review
) -> None:
    person = Person(browser, started)
    try:
        person.click("plan", "gold")
        person.page.keyboard.press("Delete")
        person.page.locator('[data-action="save"]').click()
        person.wait_for_status("Not saved")
        assert "one option" in person.status()
        assert "selected" in (person.box("plan", "basic").get_attribute("class") or "")
        assert person.problems == []
        assert person.refused == [(400, f"{started.base}/api/save")]
    finally:
        person.close()
    assert not started.schema_path.exists() and not started.pdf_path.exists()


def test_the_token_is_required(started: Review) -> None:
    schema = copy.deepcopy(START)
    save = {"schema": schema, "build": True}
    with httpx.Client(base_url=started.base, timeout=60) as http:
        assert http.get("/").status_code == 403
        assert http.get("/", params={"token": started.token[:-1] + "x"}).status_code == 403
        assert http.get("/api/review").status_code == 403
        assert http.get("/pages/0.png").status_code == 403
        assert http.post("/api/save", json=save).status_code == 403
        wrong = http.post("/api/save", json=save, headers={"X-Review-Token": "guess"})
        assert wrong.status_code == 403 and "token" in wrong.json()["error"]["message"]
        assert not started.schema_path.exists()

        page = http.get("/", params={"token": started.token})
        assert page.status_code == 200
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "<script>" not in page.text

        header = {"X-Review-Token": started.token}
        as_form = http.post("/api/save", data={"schema": "[]"}, headers=header)
        assert as_form.status_code == 415  # a cross-site form can't post JSON unasked
        done = http.post("/api/save", json=save, headers=header)
        assert done.status_code == 200, done.text
        assert done.json()["fields"] == len(schema)
    assert started.schema_path.is_file() and started.pdf_path.is_file()
    assert started.base.startswith("http://127.0.0.1:")


def test_without_a_schema_it_detects_and_saves_beside_the_pdf(flat: Path) -> None:
    with review(flat) as run:
        assert run.schema_path == flat.with_name("form.schema.json")
        assert run.pdf_path == flat.with_name("form.fillable.pdf")
        header = {"X-Review-Token": run.token}
        document = httpx.get(f"{run.base}/api/review", headers=header, timeout=60).json()
        detected = convert(flat.read_bytes()).schema
        assert [e["name"] for e in document["schema"]] == [f.name for f in detected]
        assert len(document["pages"]) == 2
        picture = httpx.get(f"{run.base}/pages/1.png", headers=header, timeout=60)
        assert picture.headers["content-type"] == "image/png"
        assert httpx.get(f"{run.base}/pages/2.png", headers=header, timeout=60).status_code == 404


def test_a_name_another_field_has_is_flagged_as_typed_and_not_taken(
    browser: Any, started: Review
) -> None:
    person = Person(browser, started)
    try:
        page = person.page
        name = page.locator('[data-prop="name"]')
        problem = page.locator("#name-problem")
        person.click("email")
        assert problem.is_hidden() and name.get_attribute("aria-invalid") == "false"

        name.fill("city")  # typed, not yet applied
        problem.wait_for()
        assert 'already named "city"' in problem.inner_text()
        assert "text field on page 1" in problem.inner_text()
        assert name.get_attribute("aria-invalid") == "true"
        assert "clash" in (person.box("city").get_attribute("class") or "")
        name.press("Enter")
        person.wait_for_status("Not renamed")
        assert person.box("email").count() == 1 and person.box("city").count() == 1

        # a radio group's name is a name too; the button's own group is not a clash
        name.fill("plan")
        assert 'already named "plan"' in problem.inner_text()
        person.click("plan", "gold")
        assert problem.is_hidden()

        person.click("email")
        name.fill("email_address")
        assert problem.is_hidden() and name.get_attribute("aria-invalid") == "false"
        name.press("Enter")
        assert person.box("email_address").count() == 1

        # grouping under another field's name is flagged too
        person.click("member")
        person.click("newsletter", shift=True)
        page.locator('[data-prop="group"]').fill("country")
        page.locator("#group-problem").wait_for()
        assert 'already named "country"' in page.locator("#group-problem").inner_text()
        page.locator('[data-action="group"]').click()
        person.wait_for_status("Not grouped")
        assert person.box("country").count() == 1 and person.box("member").count() == 1
        assert person.problems == [] and person.refused == []
    finally:
        person.close()


def test_a_save_refused_names_the_fields_not_their_places(started: Review) -> None:
    header = {"X-Review-Token": started.token}
    twice = copy.deepcopy(START)
    next(e for e in twice if e["name"] == "city")["name"] = "email"
    one_option = [e for e in copy.deepcopy(START) if e["name"] != "size"]
    plan = next(e for e in one_option if e["name"] == "plan")
    plan["widgets"] = plan["widgets"][:1]
    with httpx.Client(base_url=started.base, headers=header, timeout=60) as http:
        answer = http.post("/api/save", json={"schema": twice, "build": False})
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["message"].startswith("Two fields are named 'email': a text field on "), error
        assert error["name"] == "email" and "schema[" not in error["message"]
        answer = http.post("/api/save", json={"schema": one_option, "build": False})
        error = answer.json()["error"]
        assert answer.status_code == 400 and "field 'plan'" in error["message"], error
        assert "schema[" not in error["message"]
    assert not started.schema_path.exists()


def _yes_no_grid() -> tuple[bytes, list[dict[str, Any]]]:
    """Six yes/no questions whose buttons sit at the page's top right corner, and a text
    field with a long name at its right edge."""
    from kits.flatkit import FlatPage, one_page

    page = FlatPage()
    schema: list[dict[str, Any]] = []
    for row in range(6):
        y = 772 - row * 22  # the first row 8 pt from the page's top
        page.text(40, y + 2, f"Question {row + 1}: have you ever lived at another address?")
        widgets = []
        for export, x in (("yes", 562), ("no", 590)):  # the No button 10 pt from the edge
            page.box((x, y, x + 12, y + 12))
            widgets.append({"export": export, "page": 0, "rect": [x, y, x + 12, y + 12]})
        schema.append({"name": f"lived_elsewhere_{row + 1}", "type": "radio", "page": 0,
                       "widgets": widgets})  # fmt: skip
    schema.append({"name": "a_long_name_for_a_short_field_at_the_edge", "type": "text",
                   "page": 0, "rect": [520, 600, 604, 614]})  # fmt: skip
    return one_page(page), schema


def _inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        inner["x"] >= outer["x"] - 0.5
        and inner["y"] >= outer["y"] - 0.5
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 0.5
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 0.5
    )


def test_radio_option_captions_stay_on_the_page_over_their_own_buttons(
    browser: Any, tmp_path: Path
) -> None:
    pdf, schema = _yes_no_grid()
    (tmp_path / "grid.pdf").write_bytes(pdf)
    (tmp_path / "grid.json").write_text(json.dumps(schema))
    with review(tmp_path / "grid.pdf", "--schema", tmp_path / "grid.json") as run:
        person = Person(browser, run)
        try:
            page = person.page
            sheet = page.locator('[data-page="0"]').bounding_box()
            captions = []
            for field in page.locator("[data-field]").all():
                caption = field.locator(".caption").bounding_box()
                assert _inside(caption, sheet), (field.get_attribute("title"), caption, sheet)
                captions.append(caption)
                if field.get_attribute("data-type") != "radio":
                    continue
                button = field.bounding_box()
                middle = caption["x"] + caption["width"] / 2
                assert button["x"] <= middle <= button["x"] + button["width"], (
                    field.get_attribute("title"), caption, button,
                )  # fmt: skip
                assert field.locator(".caption").inner_text() == "=" + (
                    field.get_attribute("data-export") or ""
                )
            for i, a in enumerate(captions):  # no caption covers another
                for b in captions[i + 1 :]:
                    apart = (
                        a["x"] + a["width"] <= b["x"] + 0.5 or b["x"] + b["width"] <= a["x"] + 0.5
                        or a["y"] + a["height"] <= b["y"] + 0.5
                        or b["y"] + b["height"] <= a["y"] + 0.5
                    )  # fmt: skip
                    assert apart, (a, b)
            # selected, a button's caption names its group too, still on the page
            person.click("lived_elsewhere_1", "no")
            selected = person.box("lived_elsewhere_1", "no").locator(".caption")
            assert selected.inner_text().startswith("lived_elsewhere_1=no")
            assert _inside(selected.bounding_box(), sheet)
            shot = tmp_path / "review-yes-no-grid.png"
            page.screenshot(path=str(shot))
            print(f"\nscreenshot of the captions: {shot}")
            assert person.problems == [] and person.refused == []
        finally:
            person.close()
