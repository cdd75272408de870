"""The README's way to read a manifest's ``pages`` and ``bytes`` as integers, run as written
on a manifest ``fillpdf batch`` wrote with a failed row (whose sizes are null, which plain
pandas reads as floats)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FILLPDF = Path(sys.executable).parent / "fillpdf"


def manifest_snippet() -> str:
    """The indented ``py`` block after the README's words on ``pages`` and ``bytes``."""
    found = re.search(r"no `pages` or `bytes`.*?```py\n(.*?)```", README, re.S)
    assert found, "the README shows no way to read the manifest's sizes as integers"
    return "\n".join(line.removeprefix("  ") for line in found.group(1).splitlines())


def test_the_readme_reads_a_failed_rows_manifest_with_integer_sizes(
    tmp_path: Path, monkeypatch
) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("full_name,plan\nAda,Basic\nGrace,Gold\n", encoding="utf-8")  # row 2: bad
    out = tmp_path / "tour" / "batch"
    done = subprocess.run(
        [str(FILLPDF), "batch", str(ROOT / "include" / "sample_form.pdf"), str(rows),
         "--out-dir", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "row 2:" in done.stderr, done.stderr  # one row failed
    assert pd.read_parquet(out / "manifest.parquet")["pages"].dtype.kind == "f"  # the problem
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(compile(manifest_snippet(), "README.md", "exec"), scope)
    manifest = scope["manifest"]
    assert isinstance(manifest, pd.DataFrame)
    for column in ("pages", "bytes"):
        assert pd.api.types.is_integer_dtype(manifest[column]), manifest.dtypes
        assert manifest[column].iloc[0] > 0 and manifest[column].isna().tolist() == [False, True]
    assert list(scope["failed"]["row"]) == [2]  # type: ignore[index]
    # the other way the README names, on a frame already read
    read = pd.read_parquet(out / "manifest.parquet")
    assert '.astype({"pages": "Int64", "bytes": "Int64"})' in README
    typed = read.astype({"pages": "Int64", "bytes": "Int64"})
    assert str(typed["pages"].dtype) == "Int64" and typed["bytes"].iloc[0] == manifest["bytes"][0]
