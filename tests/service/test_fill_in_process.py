"""Fills of stored conversions in the server process: a template cache bounded in bytes, and
bounds that refuse before anything is drawn.

The cache tests run ``TemplateCache`` on real files; the bounds run against a real server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fillpdf_provider.engine import Template
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.fill_body import parse_fill
from fillpdf_provider.service.templates import BYTES_PER_FIELD, TemplateCache, held_bytes
from kits.servicekit import Server, flat_form, start_server

NOTES = [36, 400, 336, 600]  # a multiline box, 300 x 200 pt
LINE = [36, 700, 236, 716]  # a one-line box, 200 x 16 pt


def conversion(fields: int) -> bytes:
    schema = [
        {"name": f"f{i}", "type": "text", "page": 0, "rect": [36, 700 - 20 * i, 236, 716 - 20 * i]}
        for i in range(fields)
    ]
    return convert(flat_form(1), "fields", schema=json.dumps(schema)).pdf


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("conversions")
    paths = []
    for fields in (1, 2, 3):
        path = folder / f"conv_{fields}.pdf"
        path.write_bytes(conversion(fields))
        paths.append(path)
    return paths


def weight(path: Path) -> int:
    return held_bytes(Template(path.read_bytes()), path.stat().st_size)


def test_the_least_recently_filled_go_first_when_the_bytes_run_out(files: list[Path]) -> None:
    one, two, three = files
    cache = TemplateCache(weight(one) + weight(two) + weight(three) - 1)

    async def run() -> None:
        first = await cache.get("one", one)
        await cache.get("two", two)
        assert await cache.get("one", one) is first  # kept, and now the most recent
        await cache.get("three", three)  # over the bound: "two" goes, not "one"
        assert len(cache) == 2 and cache.bytes <= cache.max_bytes
        assert await cache.get("one", one) is first
        assert cache.bytes == weight(one) + weight(three)

    asyncio.run(run())


def test_a_template_counts_its_file_and_its_fields(files: list[Path]) -> None:
    template = Template(files[2].read_bytes())
    assert held_bytes(template, 1000) == 1000 + 3 * BYTES_PER_FIELD


def test_requests_at_once_parse_a_template_once(files: list[Path]) -> None:
    cache = TemplateCache(10**9)

    async def run() -> None:
        got = await asyncio.gather(*(cache.get("one", files[0]) for _ in range(8)))
        assert all(template is got[0] for template in got)
        assert len(cache) == 1

    asyncio.run(run())


def test_a_deleted_file_is_not_found_and_nothing_is_kept(tmp_path: Path) -> None:
    cache = TemplateCache(10**9)

    async def run() -> None:
        waiting = [cache.get("gone", tmp_path / "gone.pdf") for _ in range(3)]
        results = await asyncio.gather(*waiting, return_exceptions=True)
        assert all(isinstance(r, FileNotFoundError) for r in results)
        assert len(cache) == 0 and cache.bytes == 0

    asyncio.run(run())


def test_a_template_larger_than_the_cache_is_used_but_not_kept(files: list[Path]) -> None:
    cache = TemplateCache(weight(files[0]) - 1)

    async def run() -> None:
        template = await cache.get("one", files[0])
        assert template.fields and len(cache) == 0 and cache.bytes == 0

    asyncio.run(run())


# ------------------------------------------------------------------ against a server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("fill-bounds"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def stored(server: Server) -> tuple[str, str]:
    """A key and its conversion with a multiline box and a one-line box."""
    key = server.create_key("pro")
    schema = [
        {"name": "notes", "type": "text", "page": 0, "rect": NOTES, "multiline": True},
        {"name": "line", "type": "text", "page": 0, "rect": LINE},
    ]
    return key, server.convert_schema(key, schema)


def fill(server: Server, stored: tuple[str, str], values: dict[str, object]) -> dict:
    key, conversion_id = stored
    with server.client(key) as client:
        response = client.post("/v1/fill", json={"conversion_id": conversion_id, "values": values})
    if response.status_code == 200:
        assert response.content.startswith(b"%PDF-")
        return {}
    assert response.status_code == 400, response.text
    return response.json()["error"]


@pytest.mark.system
@pytest.mark.parametrize(("field", "length"), [("line", 10_000), ("notes", 600_000)])
def test_a_value_past_its_box_is_refused_by_its_length(
    server: Server, stored: tuple[str, str], field: str, length: int
) -> None:
    error = fill(server, stored, {field: "i" * length})
    assert error["param"] == field
    assert f"{length:,} characters" in error["message"] and "holds at most" in error["message"]
    assert fill(server, stored, {field: "Ada Lovelace"}) == {}  # and the server fills on


@pytest.mark.system
def test_values_over_the_text_bound_are_refused_before_they_are_read(
    server: Server, stored: tuple[str, str]
) -> None:
    error = fill(server, stored, {"notes": "word " * 150_000, "line": "x" * 300_000})
    assert error["param"] == "values" and "1,050,000 characters" in error["message"]
    assert "at most 1,000,000" in error["message"]


@pytest.mark.system
def test_an_unknown_name_is_refused_naming_the_closest(
    server: Server, stored: tuple[str, str]
) -> None:
    error = fill(server, stored, {"note": "x"})
    assert error["param"] == "note" and "notes" in error["message"]


def test_the_body_bounds_refuse_while_parsing_before_any_fill() -> None:
    """The count of values and the text in all are refused by ``parse_fill``, which the
    route runs before it looks up the conversion, so before anything is drawn."""
    many = json.dumps({"conversion_id": "conv_x", "values": {f"f{i}": "x" for i in range(11)}})
    with pytest.raises(ApiError) as raised:
        parse_fill(many.encode(), 10, 1_000)
    assert raised.value.param == "values" and "11 entries" in raised.value.message
    long = json.dumps({"conversion_id": "conv_x", "values": {"a": "x" * 600, "b": "y" * 401}})
    with pytest.raises(ApiError) as raised:
        parse_fill(long.encode(), 10, 1_000)
    assert raised.value.param == "values" and "1,001 characters" in raised.value.message
    body, _ = parse_fill(long.encode(), 10, 1_001)
    assert body.values["b"] == "y" * 401
