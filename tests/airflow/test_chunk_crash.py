"""A mapped fill chunk killed with SIGKILL mid-chunk, then run again (as Airflow retries it).

What is guaranteed after such a crash, and checked here on a real process killed while it
writes: no PDF under its final name is partial; the killed chunk published no manifest, so
the merge refuses to run until it is filled again; once it is, every input row is in the
merged manifest exactly once, each listed file holds the bytes its sha256 says, and the
output folder holds nothing else (the killed attempt's temporary files are gone).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowFailException
from pypdf import PdfReader

from fillpdf_provider.operators import merge_manifests, plan_chunks

ROOT = Path(__file__).resolve().parents[2]
FORM = ROOT / "include" / "sample_form.pdf"
ROWS = 3000
KILL_AFTER = 300  # PDFs the first chunk has published when it is killed
DEADLINE_S = 120

# The chunk as a mapped task instance runs it: the operator in a process of its own.
CHUNK = """
import json, sys
import fillpdf_provider.engine.batch
from fillpdf_provider.operators import BatchFillOperator
form, rows, out, chunk = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
fillpdf_provider.engine.batch.WRITER_PROCESS_ROWS = int(sys.argv[5])
BatchFillOperator(
    task_id="fill_chunk", template=form, rows=rows, output_dir=out, chunk=chunk,
    require=True,
).execute(context={})
"""


def _rows(path: Path) -> Path:
    """The sample rows over and over, each name made its own by its row number."""
    base = list(csv.DictReader((ROOT / "include" / "sample_rows.csv").open(encoding="utf-8")))
    rows = [dict(base[i % len(base)]) for i in range(ROWS)]
    for i, row in enumerate(rows, start=1):
        row["full_name"] = f"{row['full_name'][:30]} {i}"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _chunk(
    rows: Path, out: Path, chunk: dict[str, int], writer_rows: int
) -> subprocess.Popen[bytes]:
    """The chunk in a process; its files written by a writer process of their own when it
    has at least ``writer_rows`` rows (``batch.WRITER_PROCESS_ROWS``), else on a thread."""
    args = [str(FORM), str(rows), str(out), json.dumps(chunk), str(writer_rows)]
    return subprocess.Popen(
        [sys.executable, "-c", CHUNK, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _published(out: Path) -> int:
    return sum(1 for entry in os.scandir(out) if entry.name.endswith(".pdf"))


def _run(rows: Path, out: Path, chunk: dict[str, int], writer_rows: int) -> None:
    process = _chunk(rows, out, chunk, writer_rows)
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output.decode(errors="replace")[-3000:]


@pytest.mark.system
@pytest.mark.parametrize("writer_rows", [0, 10**9], ids=["writer-process", "writer-thread"])
def test_a_chunk_killed_mid_write_and_run_again_lists_every_row_once(
    tmp_path: Path, writer_rows: int
) -> None:
    rows, out = _rows(tmp_path / "rows.parquet"), tmp_path / "out"
    chunks = plan_chunks(str(rows), chunks=2)
    first, second = chunks

    killed = _chunk(rows, out, first, writer_rows)
    deadline = time.monotonic() + DEADLINE_S
    while (not out.is_dir() or _published(out) < KILL_AFTER) and killed.poll() is None:
        assert time.monotonic() < deadline, "the chunk published no PDFs in time"
        time.sleep(0.01)
    writers = psutil.Process(killed.pid).children()
    assert len(writers) == (1 if writer_rows == 0 else 0)
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    assert killed.returncode == -signal.SIGKILL, "the chunk ended before it could be killed"
    psutil.wait_procs(writers, timeout=30)  # a writer ends at the end of its pipe
    assert not any(writer.is_running() for writer in writers)

    # What the crash left: whole PDFs only, and no manifest for the killed chunk.
    pdfs = sorted(out.glob("*.pdf"))
    assert KILL_AFTER <= len(pdfs) < first["stop"] - first["first"]
    for pdf in pdfs:
        data = pdf.read_bytes()
        assert data.rstrip().endswith(b"%%EOF"), f"{pdf.name} is partial"
    for pdf in pdfs[-5:]:  # the newest ones, written as the kill came
        assert PdfReader(pdf).get_fields()
    assert not (out / "_manifests").exists() or not list((out / "_manifests").iterdir())
    with pytest.raises(AirflowFailException, match=r"chunk 0 \(rows 1-1500\)"):
        merge_manifests(str(out), chunks=chunks)

    _run(rows, out, second, writer_rows)
    _run(rows, out, first, writer_rows)  # the retry
    summary = merge_manifests(str(out), chunks=chunks)
    assert summary["rows"] == ROWS and summary["failed"] == 0

    manifest = pq.read_table(out / "manifest.parquet").to_pylist()
    assert [r["row"] for r in manifest] == list(range(1, ROWS + 1))
    for record in manifest:
        data = (out / record["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == record["sha256"], record["path"]
    listed = {r["path"] for r in manifest} | {"manifest.parquet", "_manifests"}
    left = sorted(entry.name for entry in os.scandir(out) if entry.name not in listed)
    assert left == [], f"files the killed attempt left behind: {left[:10]}"
