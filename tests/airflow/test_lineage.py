"""OpenLineage from real runs: ``airflow dags test`` of both example DAGs (``dag.test()`` in a
process of its own, so the provider reads its transport afresh) under the OpenLineage
provider's file transport. The events are read back and checked field by field against
facets built with openlineage-python's own classes; a run without a transport writes the
same bytes."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

pytest.importorskip(
    "airflow.providers.openlineage", reason="the [lineage] extra (OpenLineage provider) is absent"
)

from openlineage.client.generated.output_statistics_output_dataset import (
    OutputStatisticsOutputDatasetFacet,
)
from openlineage.client.generated.schema_dataset import (
    SchemaDatasetFacet,
    SchemaDatasetFacetFields,
)
from openlineage.client.serde import Serde

from fillpdf_provider import lineage
from kits.servicekit import Server, start_server

INCLUDE = Path(__file__).resolve().parents[2] / "include"
SAMPLE_ROWS = INCLUDE / "sample_rows.csv"
SAMPLE_FORM = INCLUDE / "sample_form.pdf"
AIRFLOW = Path(sys.executable).parent / "airflow"


def dags_test(
    dag_id: str, conf: dict[str, Any], events: Path | None, **env: str
) -> tuple[str, str]:
    """Run ``airflow dags test`` (``events``: the file transport's file; None: no transport);
    the run's final state and the log."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__OPENLINEAGE")}
    environ.update(env)
    if events is not None:
        transport = {"type": "file", "log_file_path": str(events), "append": True}
        environ["AIRFLOW__OPENLINEAGE__TRANSPORT"] = json.dumps(transport)
        environ["AIRFLOW__OPENLINEAGE__NAMESPACE"] = "fillpdf-tests"
    done = subprocess.run(
        [str(AIRFLOW), "dags", "test", dag_id, "-c", json.dumps(conf)],
        env=environ, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    log = done.stdout + done.stderr
    finished = [line for line in log.splitlines() if "DagRun Finished" in line]
    assert finished, log[-3000:]
    return finished[-1].split("state=")[1].split(",")[0], log


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def task_events(events: list[dict[str, Any]], task_id: str, kind: str) -> list[dict[str, Any]]:
    return [
        e for e in events if e["job"]["name"].endswith(f".{task_id}") and e["eventType"] == kind
    ]


def facet(instance: Any) -> dict[str, Any]:
    """A facet as the transport writes it, from openlineage-python's class."""
    return Serde.to_dict(instance)


def by_name(datasets: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in datasets}


@pytest.fixture(scope="module")
def merged(airflow_db, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The mail-merge DAG run twice on the sample rows: under the file transport, and with
    no transport at all."""
    work = tmp_path_factory.mktemp("lineage")
    events = work / "events.jsonl"
    runs = {}
    for name, transport in (("on", events), ("off", None)):
        out = work / f"out-{name}"
        conf = {"output": str(out), "rows": str(SAMPLE_ROWS), "chunks": 2, "min_rows_per_chunk": 1}
        state, log = dags_test("fillpdf_mail_merge", conf, transport)
        assert state == "success", log[-3000:]
        runs[name] = {"out": out, "log": log}
    return {"events": read_events(events), **runs}


def test_each_chunk_reports_the_table_the_template_the_pdfs_and_its_manifest(merged) -> None:
    out: Path = merged["on"]["out"]
    with SAMPLE_ROWS.open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle))
    chunks = task_events(merged["events"], "fill_chunk", "COMPLETE")
    assert len(chunks) == 2
    manifests = sorted((out / "_manifests").glob("chunk-*.parquet"))
    total = 0
    for event in chunks:
        inputs = by_name(event["inputs"])
        assert set(inputs) == {str(SAMPLE_ROWS), str(SAMPLE_FORM)}
        rows = inputs[str(SAMPLE_ROWS)]
        assert rows["namespace"] == "file" and inputs[str(SAMPLE_FORM)]["namespace"] == "file"
        schema = rows["facets"]["schema"]
        types = {f["name"]: f["type"] for f in schema["fields"]}
        expected = SchemaDatasetFacet(
            fields=[SchemaDatasetFacetFields(name=c, type=types[c]) for c in header],
            producer=lineage.PRODUCER,
        )
        assert schema == facet(expected)
        assert all("string" in t for t in types.values())  # CSV cells are read as text
        outputs = by_name(event["outputs"])
        manifest_name = next(n for n in outputs if n.endswith(".parquet"))
        manifest = pq.read_table(manifest_name).to_pylist()
        assert Path(manifest_name) in manifests
        ok = [r for r in manifest if r["status"] == "ok"]
        pdfs = outputs[str(out)]
        assert pdfs["outputFacets"]["outputStatistics"] == facet(
            OutputStatisticsOutputDatasetFacet(
                rowCount=len(ok),
                size=sum(r["bytes"] for r in ok),
                fileCount=len(ok),
                producer=lineage.PRODUCER,
            )
        )
        assert sum((out / r["path"]).stat().st_size for r in ok) == sum(r["bytes"] for r in ok)
        stats = outputs[manifest_name]["outputFacets"]["outputStatistics"]
        assert stats["rowCount"] == len(manifest) > 0
        columns = [f["name"] for f in outputs[manifest_name]["facets"]["schema"]["fields"]]
        assert columns == pq.read_schema(manifest_name).names
        total += len(manifest)
    assert total == pq.read_table(out / "manifest.parquet").num_rows
    (merge,) = task_events(merged["events"], "collect", "COMPLETE")
    assert sorted(d["name"] for d in merge["inputs"]) == [str(m) for m in manifests]
    (manifest,) = merge["outputs"]
    assert manifest["name"] == str(out / "manifest.parquet")
    assert manifest["outputFacets"]["outputStatistics"]["rowCount"] == total


def test_both_checks_report_each_expectation_on_the_dataset_they_checked(merged) -> None:
    out: Path = merged["on"]["out"]
    for task_id, checked, results in (
        ("check_input", SAMPLE_ROWS, out / "_quality" / "input.json"),
        ("check_manifest", out / "manifest.parquet", out / "_quality" / "manifest.json"),
    ):
        (event,) = task_events(merged["events"], task_id, "COMPLETE")
        dataset = by_name(event["inputs"])[str(checked)]
        assertions = dataset["inputFacets"]["dataQualityAssertions"]
        assert assertions["_producer"] == lineage.PRODUCER
        saved = json.loads(results.read_text())
        outcomes = saved["validation"]["results"]
        assert len(assertions["assertions"]) == len(outcomes) > 0
        for assertion, outcome in zip(assertions["assertions"], outcomes, strict=True):
            config = outcome["expectation_config"]
            assert assertion["assertion"] == config["type"]
            assert assertion["success"] is True is outcome["success"]
            assert assertion.get("column") == config["kwargs"].get("column")


def test_lineage_off_writes_the_same_bytes_and_no_word_of_lineage(merged) -> None:
    on, off = merged["on"]["out"], merged["off"]["out"]
    files_on = sorted(p.relative_to(on) for p in on.rglob("*.pdf"))
    files_off = sorted(p.relative_to(off) for p in off.rglob("*.pdf"))
    assert files_on == files_off and files_on
    for name in files_on:
        assert (on / name).read_bytes() == (off / name).read_bytes(), name
    assert (on / "manifest.parquet").read_bytes() == (off / "manifest.parquet").read_bytes()
    log = merged["off"]["log"]
    assert "openlineage" not in log.lower()
    warnings = [line for line in log.splitlines() if "[warning" in line]
    assert [w for w in warnings if "graphviz" not in w] == []  # no task warns of lineage


def test_a_failing_input_check_reports_its_failed_assertion(airflow_db, tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    with SAMPLE_ROWS.open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    table[1]["newsletter"] = "maybe"  # a checkbox takes yes or no
    with rows.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    events = tmp_path / "events.jsonl"
    conf = {"output": str(tmp_path / "out"), "rows": str(rows), "chunks": 1}
    state, log = dags_test("fillpdf_mail_merge", conf, events)
    assert state == "failed", log[-3000:]
    (event,) = task_events(read_events(events), "check_input", "FAIL")
    dataset = by_name(event["inputs"])[str(rows)]
    assertions = dataset["inputFacets"]["dataQualityAssertions"]["assertions"]
    failed = [a for a in assertions if not a["success"]]
    assert [a["column"] for a in failed] == ["newsletter"], failed
    assert any(a["success"] for a in assertions)  # the expectations that held are there too
    assert not task_events(read_events(events), "fill_chunk", "COMPLETE")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("lineage-service"))
    yield running
    running.stop()


def test_a_conversion_reports_its_fields_and_the_quota(
    airflow_db, service: Server, tmp_path: Path
) -> None:
    key = service.create_key("enterprise", pages_included=1000, rate_limit_per_minute=100000)
    conn = json.dumps({"conn_type": "fillpdf", "host": service.base_url, "password": key})
    events, out = tmp_path / "events.jsonl", tmp_path / "converted"
    conf = {"inbox": str(INCLUDE / "inbox" / "*.pdf"), "output": str(out)}
    state, log = dags_test("fillpdf_convert_inbox", conf, events, AIRFLOW_CONN_FILLPDF_DEFAULT=conn)
    assert state == "success", log[-3000:]
    (event,) = task_events(read_events(events), "convert", "COMPLETE")
    sources = sorted(str(p) for p in (INCLUDE / "inbox").glob("*.pdf"))
    assert sorted(d["name"] for d in event["inputs"]) == sources
    outputs = by_name(event["outputs"])
    pages = 0
    for source in sources:
        stem = Path(source).stem
        entry = json.loads((out / f"{stem}.schema.json").read_text())
        pages += entry["pages"]
        expected = facet(
            SchemaDatasetFacet(
                fields=[
                    SchemaDatasetFacetFields(name=f["name"], type=f["type"])
                    for f in entry["schema"]
                ],
                producer=lineage.PRODUCER,
            )
        )
        for name in (f"{stem}.fillable.pdf", f"{stem}.schema.json"):
            assert outputs[str(out / name)]["facets"]["schema"] == expected
    quota = event["run"]["facets"][lineage.QUOTA_FACET]
    assert quota == facet(
        lineage.FillPdfQuotaRunFacet(
            pagesBilled=pages,
            plan="enterprise",
            pagesLeft=1000 - pages,
            pagesIncluded=1000,
            producer=lineage.PRODUCER,
        )
    )
    assert quota["_schemaURL"] == lineage.QUOTA_SCHEMA_URL


def test_the_quota_facet_matches_its_shipped_schema() -> None:
    import jsonschema

    shipped = Path(lineage.__file__).with_name("lineage_facets.json")
    schema = json.loads(shipped.read_text())
    ours = schema["$defs"]["FillPdfQuotaRunFacet"]["allOf"][1]  # the base RunFacet is OpenLineage's
    example = facet(
        lineage.FillPdfQuotaRunFacet(pagesBilled=3, plan="developer", producer=lineage.PRODUCER)
    )
    jsonschema.validate(example, ours)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**example, "pagesBilled": -1}, ours)
    assert lineage.QUOTA_SCHEMA_URL.endswith("lineage_facets.json#/$defs/FillPdfQuotaRunFacet")


def test_a_fill_reports_its_template_and_the_pdf(tmp_path: Path, monkeypatch) -> None:
    """FillOperator: a file template and a conversion id (in the embedded store), each with
    the form's fields; the PDF with its bytes."""
    from fillpdf_provider.operators import ConvertOperator, FillOperator

    store = tmp_path / "store"
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(store))
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    (converted,) = ConvertOperator(
        task_id="c", pdfs=str(INCLUDE / "inbox" / "renewal-form.pdf"), output_dir=str(tmp_path)
    ).execute(context={})  # type: ignore[arg-type]
    for template in (str(SAMPLE_FORM), converted["conversion_id"]):
        target = tmp_path / "filled.pdf"
        operator = FillOperator(task_id="f", template=template, values={}, output_path=str(target))
        operator.execute(context={})  # type: ignore[arg-type]
        facets = operator.get_openlineage_facets_on_complete(None)
        (read,) = facets.inputs
        where = template if template.endswith(".pdf") else str(store / f"{template}.pdf")
        assert (read.namespace, read.name) == ("file", where)
        assert Path(where).exists()
        names = [f.name for f in read.facets["schema"].fields]
        assert names and len(names) == len(set(names))
        (written,) = facets.outputs
        assert (written.namespace, written.name) == ("file", str(target))
        stats = written.outputFacets["outputStatistics"]
        assert (stats.size, stats.fileCount) == (target.stat().st_size, 1)


def test_a_transport_that_fails_never_fails_a_task(airflow_db, tmp_path: Path) -> None:
    """Lineage sent to a port nobody listens on: the run, and its outputs, as without it."""
    from kits.servicekit import free_port

    url = f"http://127.0.0.1:{free_port()}"
    # no retries: each event fails at once (the default retries with back-off, ~9 s an event)
    transport = json.dumps({"type": "http", "url": url, "timeout": 1, "retry": {"total": 0}})
    out = tmp_path / "out"
    conf = {"output": str(out), "rows": str(SAMPLE_ROWS), "chunks": 1, "check_input": False}
    state, log = dags_test(
        "fillpdf_mail_merge", conf, None, AIRFLOW__OPENLINEAGE__TRANSPORT=transport
    )
    assert state == "success", log[-3000:]
    manifest = pq.read_table(out / "manifest.parquet").to_pylist()
    assert manifest and all(r["status"] == "ok" for r in manifest)
    assert "openlineage" in log.lower()  # the provider did try, and said so in the log
