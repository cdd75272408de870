"""Property-based run of the live service against its own ``/v1/openapi.json`` (schemathesis).

Acceptance: generated requests find no 5xx and no answer that contradicts the published
schema (status code, content type, body, declared headers). Random bytes never make a PDF
and random ids never name a conversion or sign a URL, so one run swaps real ones (a flat
form, a stored conversion, its signed URL) into the generated requests to reach the 200s.

schemathesis' pytest plugin (``from_fixture``) breaks on pytest 9 (it sets the removed
``Item._nodeid``), so each operation's strategy is driven by Hypothesis directly, and every
operation's minimal failure is collected before the test fails, to report them all at once.
"""

from __future__ import annotations

import base64
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from kits.servicekit import flat_form


def no_server_error(ctx: Any, response: Any, case: Case) -> bool | None:
    """Any 5xx fails: a PDF the engine can't read is 415 ``unsupported_file``, and 502
    ``engine_error`` (an unexpected engine failure) is a bug whatever the input."""
    return not_a_server_error(ctx, response, case)


def request_id_header(ctx: Any, response: Any, case: Case) -> bool | None:
    """The contract: every response carries X-Request-Id (not declared in the schema)."""
    assert response.headers.get("x-request-id"), "no X-Request-Id header"
    return None


# ignored_auth replays every 2xx without a key and with a wrong one: it must then be refused.
CHECKS = [
    no_server_error,
    request_id_header,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    ignored_auth,
]
# Fixed seed (derandomize) and bounded; slow endpoints (the engine) trip speed/size checks.
SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=50,
    report_multiple_bugs=False,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
BAD_AUTHORIZATION = [
    None,
    "",
    "Bearer",
    "Bearer fpk_0000000000000000_" + "A" * 43,
    "Basic dXNlcjpwYXNzd29yZA==",
    "bearer not-a-key",
]
# Suffixes that keep a real id's prefix: the service looks such ids up in the database.
ID_SUFFIXES = st.one_of(st.sampled_from(["\x00", "é", "/x", "%"]), st.text(min_size=1, max_size=4))
# Everything str.isdigit() accepts, not only ASCII: the signed URL's expiry is parsed from it.
DIGITS = st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=12)
FILL_VALUES = st.one_of(st.none(), st.booleans(), st.text(max_size=30), st.integers())


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def api_key(server) -> str:
    """Enterprise key with no rate limit and a large quota: no 429/402 noise in the run."""
    return server.create_key(
        "enterprise",
        pages_included=100_000,
        rate_limit_per_minute=None,
        max_pages_per_file=50,
        overage_rate_usd=0.5,
        hard_stop=False,
    )


@pytest.fixture(scope="module")
def api_schema(server):
    """The schema exactly as the running server publishes it."""
    return schemathesis.openapi.from_url(f"{server.base_url}/v1/openapi.json")


@pytest.fixture(scope="module")
def real(server, api_key: str) -> dict[str, Any]:
    """A stored conversion, its signed URL's parts and its fillable PDF, for the seeded run."""
    flat = flat_form(1)
    with server.client(api_key) as client:
        converted = client.post(
            "/v1/convert", files={"file": ("form.pdf", flat, "application/pdf")}
        )
        assert converted.status_code == 200, converted.text
        result = converted.json()
        fillable = httpx.get(result["document_url"], timeout=60)
        assert fillable.status_code == 200, fillable.text
    query = {k: v[0] for k, v in parse_qs(urlsplit(result["document_url"]).query).items()}
    return {
        "id": result["conversion_id"],
        "schema": result["schema"],
        "expires": query["expires"],
        "signature": query["signature"],
        "flat_pdf": flat,
        "fillable_pdf": fillable.content,
    }


# --------------------------------------------------------------------------- driver


def _operations(api_schema) -> list[APIOperation]:
    return [result.ok() for result in api_schema.get_all_operations()]


def _secured(operation: APIOperation) -> bool:
    return bool(operation.definition.raw.get("security"))


def _send(case: Case, authorization: str | None, extra: tuple = ()) -> Any:
    """Call and validate; on failure, note the exact request and answer for the report."""
    headers = {"Authorization": authorization} if authorization is not None else {}
    response = None
    try:
        response = case.call(headers=headers, timeout=60)
        case.validate_response(response, checks=[*CHECKS, *extra], headers=headers)
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis' FailureGroup is the latter
        # schemathesis prints the Authorization header as [Filtered].
        exc.add_note("request: " + case.as_curl_command(headers=headers))
        if response is not None:
            exc.add_note(f"response: {response.status_code} {response.text[:800]}")
        raise
    return response


@dataclass
class Exploration:
    """The minimal failure of each operation, and the statuses each one answered."""

    failures: dict[str, str] = field(default_factory=dict)
    statuses: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))

    def report(self) -> str:
        failures = [f"=== {label}\n{text}" for label, text in self.failures.items()]
        seen = {label: dict(counts) for label, counts in self.statuses.items()}
        return "\n\n".join([*failures, f"statuses answered: {seen}"])


def _explore(
    operations: list[APIOperation],
    strategy: Callable[[APIOperation], st.SearchStrategy[Case]],
    run: Callable[[Case, st.DataObject], Any],
) -> Exploration:
    """Run ``run`` on generated cases of every operation, one Hypothesis test each."""
    found = Exploration()
    for operation in operations:

        @SETTINGS
        @given(case=strategy(operation), data=st.data())
        def explore(case: Case, data: st.DataObject) -> None:
            response = run(case, data)
            found.statuses[case.operation.label][response.status_code] += 1

        try:
            explore()
        except (Exception, BaseExceptionGroup) as exc:
            notes = "\n".join(getattr(exc, "__notes__", []))
            found.failures[operation.label] = f"{type(exc).__name__}: {exc}\n{notes}"
    return found


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_generated_requests_conform(api_schema, api_key: str, mode: GenerationMode) -> None:
    """Schema-valid and schema-invalid requests with a valid key: no 5xx, nothing off-schema.

    Invalid requests must also be refused with a 4xx (negative_data_rejection).
    """
    extra = (negative_data_rejection,) if mode == GenerationMode.NEGATIVE else ()
    found = _explore(
        _operations(api_schema),
        lambda op: op.as_strategy(generation_mode=mode),
        lambda case, _: _send(case, f"Bearer {api_key}", extra),
    )
    assert not found.failures, found.report()


def _variant(data: st.DataObject, *names: str) -> str:
    return data.draw(st.sampled_from(names), label="variant")


def _seed_convert(case: Case, data: st.DataObject, real: dict[str, Any]) -> None:
    pdf = real["flat_pdf"]
    variant = _variant(data, "flat", "truncated", "junk after header", "generated")
    if variant == "flat":
        case.body["file"] = pdf
    elif variant == "truncated":  # claims to be a PDF but is cut short: 415 unsupported_file
        case.body["file"] = pdf[: data.draw(st.integers(8, len(pdf) - 1), label="cut")]
    elif variant == "junk after header":
        case.body["file"] = b"%PDF-1.7\n" + data.draw(st.binary(max_size=200), label="rest")


def _fill_values(data: st.DataObject, real: dict[str, Any]) -> dict[str, Any]:
    """Values for some of the real form's fields, of the right type or of any JSON type."""
    right = {"checkbox": st.booleans(), "radio": st.text(max_size=10), "choice": st.text()}
    fields = {entry["name"]: entry["type"] for entry in real["schema"]}
    chosen = data.draw(st.sets(st.sampled_from(sorted(fields))), label="fields filled")
    latin = st.text(st.characters(codec="latin-1"), max_size=40)
    return {
        name: data.draw(st.one_of(right.get(fields[name], latin), FILL_VALUES), label=name)
        for name in sorted(chosen)
    }


def _seed_fill(case: Case, data: st.DataObject, real: dict[str, Any]) -> None:
    source = _variant(data, "conversion", "conversion_id with suffix", "pdf", "generated")
    if source.startswith("conversion"):
        case.body.pop("pdf_base64", None)
        case.body.pop("fields", None)
        case.body["conversion_id"] = real["id"]
        if source != "conversion":
            case.body["conversion_id"] += data.draw(ID_SUFFIXES, label="suffix")
    elif source == "pdf":
        case.body.pop("conversion_id", None)
        case.body["pdf_base64"] = base64.b64encode(real["fillable_pdf"]).decode()
        case.body["fields"] = [{"name": f["name"], "type": f["type"]} for f in real["schema"]]
    if source != "generated":
        values = _variant(data, "none", "real names", "generated")
        if values != "generated":
            case.body["values"] = {} if values == "none" else _fill_values(data, real)


def _seed_file(case: Case, data: st.DataObject, real: dict[str, Any]) -> None:
    variant = _variant(data, "signed URL", "mutated", "generated")
    if variant == "generated":
        return
    case.path_parameters["conversion_id"] = quote(real["id"], safe="")
    generated = dict(case.query or {})
    query = {"expires": real["expires"], "signature": real["signature"]}
    if variant == "mutated":  # each part kept, replaced, or left as generated (maybe absent)
        for name, other in (("expires", DIGITS), ("signature", st.text(max_size=70))):
            replace = data.draw(st.sampled_from(["keep", "other", "generated"]), label=name)
            if replace == "other":
                query[name] = data.draw(other, label=name)
            elif replace == "generated":
                query.pop(name)
                if name in generated:
                    query[name] = generated[name]
    case.query = query


def _seed(case: Case, data: st.DataObject, real: dict[str, Any]) -> None:
    """Swap real values into a generated case where random ones can't reach a 200."""
    path = case.operation.path
    if path == "/v1/convert" and isinstance(case.body, dict):
        _seed_convert(case, data, real)
    elif path == "/v1/fill" and isinstance(case.body, dict):
        _seed_fill(case, data, real)
    elif path == "/v1/files/{conversion_id}.pdf":
        _seed_file(case, data, real)
    elif path == "/v1/conversions/{conversion_id}":
        variant = _variant(data, "real", "real with suffix", "generated")
        if variant != "generated":
            suffix = data.draw(ID_SUFFIXES, label="suffix") if variant != "real" else ""
            case.path_parameters["conversion_id"] = quote(real["id"] + suffix, safe="")


def test_requests_on_real_resources_conform(api_schema, api_key: str, real: dict[str, Any]) -> None:
    """Generated requests on a real PDF, conversion or signed URL: also every 200 on-schema."""
    operations = _operations(api_schema)

    def run(case: Case, data: st.DataObject) -> Any:
        _seed(case, data, real)
        return _send(case, f"Bearer {api_key}")

    found = _explore(operations, lambda op: op.as_strategy(), run)
    assert not found.failures, found.report()
    unreached = [op.label for op in operations if not found.statuses[op.label][200]]
    assert not unreached, f"no 200 from {unreached}: {dict(found.statuses)}"


def test_missing_or_bad_key_is_401(api_schema) -> None:
    """Every operation that declares the bearer scheme answers 401, on-schema, without a key."""
    secured = [op for op in _operations(api_schema) if _secured(op)]
    assert secured, "the schema declares no secured operation"

    def run(case: Case, data: st.DataObject) -> Any:
        authorization = data.draw(st.sampled_from(BAD_AUTHORIZATION), label="Authorization")
        response = _send(case, authorization)
        assert response.status_code == 401, f"{response.status_code} {response.text[:300]}"
        assert response.json()["error"]["type"] == "authentication_error"
        assert response.headers.get("www-authenticate") == ["Bearer"]
        return response

    found = _explore(secured, lambda op: op.as_strategy(), run)
    assert not found.failures, found.report()
