"""The manifest expectations that compare rows with each other, on a million-row manifest.

A row number listed once, a file per row, a sha256 shared only by rows that fill the same
values: these span rows, so they cannot run slice by slice as the row-by-row ones do
(``slices``). ``ManifestWhole`` reads the manifest once and keeps a few bytes of each row:
64-bit hashes of its row number, file and sha256, and whether it is the first row with
its sha256 and input values (``new_values``). GX then runs the row count on a frame of
the row count alone, and unique row numbers, files and sha256 on the real values of only
the rows whose hash repeats, read again: a hash collision costs a row read again, never a
false failure. Their counts are then set to the whole manifest's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fillpdf_provider.quality.frames import ROW, RowsSource, manifest_frame, manifest_row_column
from fillpdf_provider.quality.slices import hashes, table_slices, with_percents

#: What ``slices.hashes`` gives every null (pandas hashes None to this); also the input key
#: of a row whose number is not an input row's.
NULL_HASH = np.uint64(0xFFFFFFFFFFFFFFFF)
#: Hashing reads the manifest in this many pieces a slice: a slice's strings are hashed
#: through a Python object each, and a smaller piece leaves the allocator less to keep.
HASHED_SLICES = 5


def on_row_count(expectation: Any) -> bool:
    """The row count: checked on a frame of that many rows and one column."""
    return type(expectation).__name__ == "ExpectTableRowCountToEqual"


def on_repeats(expectation: Any) -> bool:
    """Unique row numbers, files and sha256: checked on the rows whose hash repeats."""
    return type(expectation).__name__ == "ExpectColumnValuesToBeUnique"


@dataclasses.dataclass
class _Hashed:
    """A few bytes of each manifest row, gathered slice by slice."""

    columns: list[str] | None = None
    rows: int = 0
    null_ids: int = 0
    null_paths: int = 0
    ids: list[Any] = dataclasses.field(default_factory=list)
    paths: list[Any] = dataclasses.field(default_factory=list)
    sha: list[Any] = dataclasses.field(default_factory=list)
    values: list[Any] = dataclasses.field(default_factory=list)

    def add(self, piece: pa.Table, keys: Any) -> None:
        names = piece.column_names
        if self.columns is None:
            self.columns = names
        if ROW in names:
            self.ids.append(row_number_hashes(piece.column(ROW)))
            self.null_ids += piece.column(ROW).null_count
        if "path" in names:
            self.paths.append(hashes(piece.column("path")))
            self.null_paths += piece.column("path").null_count
        if "sha256" in names:
            self.sha.append(hashes(piece.column("sha256")))
            if keys is not None and ROW in names:
                self.values.append(keys_by_row(piece.column(ROW), keys))
            else:  # no input to compare with: every row's values are its own
                own = np.arange(self.rows, self.rows + piece.num_rows, dtype=np.uint64)
                self.values.append(own)
        self.rows += piece.num_rows


@dataclasses.dataclass
class ManifestWhole:
    """What the expectations that span rows need of a whole manifest, a few bytes a row:
    each row's ``new_values``, and the rows whose row number, file or sha256 hash repeats
    (with their real values, read again)."""

    source: RowsSource
    slice_rows: int
    columns: list[str]
    row_column: str
    rows: int
    new_values: Any
    repeats: pd.DataFrame
    null_ids: int
    null_paths: int
    new_rows: int
    null_new_sha: int

    @classmethod
    def read(cls, source: RowsSource, keys: Any, slice_rows: int) -> ManifestWhole:
        """Read ``source`` once; ``keys`` (``checks.input_key_array``) are the input rows'
        keys, or None to treat every row's values as its own."""
        hashed = _Hashed()
        for piece in table_slices(source, max(1, slice_rows // HASHED_SLICES)):
            hashed.add(piece, keys)
        columns = list(hashed.columns or [])
        new_values = None
        new_rows = null_new_sha = 0
        suspects = np.zeros(hashed.rows, dtype=bool)
        if hashed.ids:
            suspects |= repeated(_joined(hashed.ids))
        if hashed.paths:
            suspects |= repeated(_joined(hashed.paths))
        if hashed.sha:  # (each whole column dropped once used: 8 bytes a row each)
            sha = _joined(hashed.sha)
            new_values = first_of_pairs(sha, _joined(hashed.values))
            new_rows = int(new_values.sum())
            null_new_sha = int((new_values & (sha == NULL_HASH)).sum())
            sha[~new_values] = NULL_HASH
            suspects |= repeated(sha)
            del sha
        whole = cls(
            source, slice_rows, columns + (["new_values"] if new_values is not None else []),
            manifest_row_column(columns), hashed.rows, new_values, pd.DataFrame(),
            hashed.null_ids, hashed.null_paths, new_rows, null_new_sha,
        )  # fmt: skip
        whole.repeats = whole._read_repeats(np.flatnonzero(suspects))
        return whole

    def slices(self) -> Iterator[tuple[int, pa.Table]]:
        """The manifest again, slice by slice, each with the position of its first row."""
        first = 1
        for piece in table_slices(self.source, self.slice_rows):
            yield first, piece
            first += piece.num_rows

    def new_values_of(self, first: int, piece: pa.Table) -> Any:
        if self.new_values is None:
            return None
        return self.new_values[first - 1 : first - 1 + piece.num_rows]

    def count_frame(self) -> pd.DataFrame:
        """A frame of as many rows as the manifest, for its row count: one byte a row."""
        return pd.DataFrame({self.row_column: np.zeros(self.rows, dtype=np.int8)})

    def repeats_frame(self) -> pd.DataFrame:
        return self.repeats

    def _read_repeats(self, positions: Any) -> pd.DataFrame:
        """The rows at ``positions`` (0-based), as ``manifest_frame`` builds them."""
        wanted = [c for c in (self.row_column, "path", "sha256", "new_values") if c]
        frames: list[pd.DataFrame] = []
        for first, piece in self.slices():
            start = first - 1
            here = positions[(positions >= start) & (positions < start + piece.num_rows)]
            if len(here) == 0 and frames:
                continue
            taken = piece.take(pa.array(here - start, pa.int64()))
            frame, _ = manifest_frame(
                taken, None, first_row=1, new_values=self.new_values[here]
                if self.new_values is not None else None,
            )  # fmt: skip
            if self.row_column != ROW:
                frame[self.row_column] = here + 1
            frames.append(frame[[c for c in wanted if c in frame.columns]])
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def as_on_every_row(self, result: dict[str, Any]) -> dict[str, Any]:
        """The uniqueness outcomes on the repeated rows, counted over the whole manifest."""
        outcomes = []
        for outcome in result.get("results", []):
            config = outcome["expectation_config"]
            column = (config.get("kwargs") or {}).get("column")
            fixed = dict(outcome.get("result") or {})
            if column == "sha256":
                fixed.update(element_count=self.new_rows, missing_count=self.null_new_sha)
            elif column == "path":
                fixed.update(element_count=self.rows, missing_count=self.null_paths)
            else:  # the row numbers
                fixed.update(element_count=self.rows, missing_count=self.null_ids)
            outcomes.append({**outcome, "result": with_percents(fixed)})
        return {**result, "results": outcomes}


def row_number_hashes(ids: pa.ChunkedArray) -> Any:
    """``hashes`` of row numbers, alike in every slice: whole numbers as int64 (pandas would
    hash a slice with a null as floats, 5.0 apart from 5), every null as ``NULL_HASH``."""
    if pa.types.is_integer(ids.type):
        ids = ids.cast(pa.int64())
        found = pd.util.hash_array(pc.fill_null(ids, 0).to_numpy())
    else:  # text or floats: one type in every slice
        found = hashes(ids)
    if ids.null_count:
        found[pc.is_null(ids).to_numpy(zero_copy_only=False)] = NULL_HASH
    return found


def keys_by_row(ids: pa.ChunkedArray, keys: Any) -> Any:
    """The input key of each manifest row, looked up by its row number (row ``n`` at
    ``keys[n - 1]``); a row numbered outside the input, or not at all, gets ``NULL_HASH``,
    which all such rows share."""
    try:
        numbers = pc.fill_null(ids.cast(pa.int64()), 0).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # not row numbers at all
        return np.full(len(ids), NULL_HASH)
    if not len(keys):
        return np.full(len(ids), NULL_HASH)
    known = (numbers >= 1) & (numbers <= len(keys))
    return np.where(known, keys[np.where(known, numbers - 1, 0)], NULL_HASH)


def _joined(parts: list[Any]) -> Any:
    """``parts`` as one array, the list emptied: its pieces are freed as the whole is made."""
    whole = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    parts.clear()
    return whole


def first_of_pairs(first: Any, second: Any) -> Any:
    """Which entries are the first (lowest position) with their ``(first, second)`` pair:
    two sorted 8-byte columns, where pandas' ``duplicated`` builds a hash table a pair."""
    order = np.lexsort((second, first))  # stable: equal pairs keep their order
    same = np.ones(len(first), dtype=bool)  # the same pair as the entry before, sorted
    same[:1] = False
    for column in (first, second):  # one sorted copy at a time
        ranked = column[order]
        same[1:] &= ranked[1:] == ranked[:-1]
        del ranked
    out = np.empty(len(first), dtype=bool)
    out[order] = ~same
    return out


def repeated(values: Any) -> Any:
    """Which entries of ``values`` (numpy uint64) occur more than once, nulls left out."""
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    same = np.zeros(len(values), dtype=bool)
    if len(values) > 1:
        equal = ranked[1:] == ranked[:-1]
        del ranked
        same[1:] |= equal
        same[:-1] |= equal
    out = np.zeros(len(values), dtype=bool)
    out[order] = same
    return out & (values != NULL_HASH)
