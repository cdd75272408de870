"""What a new user of the ``fillpdf`` command hits first: a pipe closed early, a mistyped
data dir, the modes of the files written, and a batch with many bad rows."""

from __future__ import annotations

import csv
import os
import stat
import subprocess
from pathlib import Path

import pytest

from fillpdf_provider.engine.filler import Template
from kits.cli_support import FILLPDF, ROOT, assert_clean_error, run
from kits.formkit import Spec, build_form

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"
SAMPLE_ROWS = ROOT / "include" / "sample_rows.csv"


def _bad_rows(path: Path, count: int) -> Path:
    """``count`` sample rows, each with a plan the form does not offer."""
    with SAMPLE_ROWS.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:count]
    for row in rows:
        row["plan"] = "Gold"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


# --------------------------------------------------------------------------- closed pipe


@pytest.fixture(scope="module")
def big_form(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A form whose listing is far longer than a pipe's buffer, so the pipe surely breaks."""
    specs = [
        Spec(f"field_{i:04d}_with_a_rather_long_name", "text", (40, 40 + (i % 40) * 18, 290, 56))
        for i in range(1500)
    ]
    path = tmp_path_factory.mktemp("big") / "big.pdf"
    path.write_bytes(build_form(specs))
    return path


@pytest.mark.parametrize("flags", [["--json"], []], ids=["json", "table"])
def test_stdout_closed_after_one_line_ends_quietly(big_form: Path, flags: list[str]) -> None:
    proc = subprocess.Popen(
        [str(FILLPDF), "inspect", str(big_form), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    stderr = proc.stderr.read().decode("utf-8", "replace")
    code = proc.wait(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert "BrokenPipeError" not in stderr, stderr
    assert stderr == "", stderr
    assert code in (0, 141, -13), (code, stderr)


# --------------------------------------------------------------------------- keys data dir


@pytest.mark.parametrize("action", [["list"], ["revoke", "abc123"]])
def test_keys_with_a_missing_data_dir_is_an_error_and_creates_nothing(
    tmp_path: Path, action: list[str]
) -> None:
    missing = tmp_path / "typo"
    done = run("keys", *action, "--data-dir", missing)
    assert_clean_error(done, str(missing), "fillpdf keys create", only_line=True)
    assert not missing.exists()


def test_keys_create_starts_a_new_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "new"
    done = run("keys", "create", "--plan", "developer", "--data-dir", data_dir)
    assert done.returncode == 0, done.stderr
    assert data_dir.is_dir()
    listed = run("keys", "list", "--data-dir", data_dir)
    assert listed.returncode == 0, listed.stderr
    assert "live" in listed.stdout


# --------------------------------------------------------------------------- file modes


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_fill_writes_a_file_as_readable_as_open_would(tmp_path: Path) -> None:
    values = tmp_path / "values.json"
    values.write_text('{"full_name": "Ada Lovelace"}', encoding="utf-8")
    output = tmp_path / "out.pdf"
    done = subprocess.run(
        [str(FILLPDF), "fill", str(SAMPLE_FORM), "--values", str(values), "-o", str(output)],
        capture_output=True,
        text=True,
        umask=0o022,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert _mode(output) == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_template_write_follows_the_umask(tmp_path: Path, umask_022: None) -> None:
    output = Template(SAMPLE_FORM).write(tmp_path / "out.pdf", {"full_name": "Ada"})
    assert _mode(output) == 0o644
    os.umask(0o077)
    again = Template(SAMPLE_FORM).write(tmp_path / "private.pdf", {"full_name": "Ada"})
    assert _mode(again) == 0o600


# --------------------------------------------------------------------------- batch errors


def test_batch_says_how_many_errors_it_did_not_show(tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    done = run("batch", SAMPLE_FORM, _bad_rows(tmp_path / "rows.csv", 8), "--out-dir", out_dir)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert sum(line.startswith("row ") for line in done.stderr.splitlines()) == 5
    manifest = out_dir / "manifest.parquet"
    assert f"... and 3 more; every row's error is in {manifest}" in done.stderr, done.stderr


def test_batch_with_few_errors_shows_them_all(tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    done = run("batch", SAMPLE_FORM, _bad_rows(tmp_path / "rows.csv", 5), "--out-dir", out_dir)
    assert done.returncode == 1
    assert sum(line.startswith("row ") for line in done.stderr.splitlines()) == 5
    assert "more;" not in done.stderr
