"""Stored conversions parsed once and kept, so a fill by ``conversion_id`` reads no file.

A stored conversion is the service's own output, parsed and checked when it was made, and a
fill brings only values, bounded before any drawing (``Template.fill`` counts each text
value against its box's room; the body and the number of values are bounded before that).
So these fills run in the server process, from this cache, where a PDF the caller sends
runs in a child that can be killed. The cache is bounded in bytes: each template counts an
estimate of the memory it holds, and the least recently used goes first.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from pathlib import Path

import anyio

from fillpdf_provider.engine.filler import Template

#: Memory a parsed template holds besides its file, per field: measured 40-110 KiB on the
#: wild corpus (its PDF objects, widget plans and fonts).
BYTES_PER_FIELD = 96 * 1024


def held_bytes(template: Template, file_bytes: int) -> int:
    """The memory ``template`` is counted as holding: its file and its fields."""
    return file_bytes + BYTES_PER_FIELD * max(1, len(template.fields))


class TemplateCache:
    """Parsed stored conversions of one server process, least recently used out first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._kept: OrderedDict[str, tuple[Template, int]] = OrderedDict()
        self._loading: dict[str, asyncio.Future[Template]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    async def get(self, conversion_id: str, path: Path) -> Template:
        """The template of ``conversion_id``, parsed from ``path`` the first time (in a
        thread, once however many requests ask at the same time).

        ``FileNotFoundError`` when the file has been deleted.
        """
        kept = self._kept.get(conversion_id)
        if kept is not None:
            self._kept.move_to_end(conversion_id)
            return kept[0]
        loading = self._loading.get(conversion_id)
        if loading is not None:
            return await asyncio.shield(loading)
        future: asyncio.Future[Template] = asyncio.get_running_loop().create_future()
        self._loading[conversion_id] = future
        try:
            template, size = await anyio.to_thread.run_sync(_load, path)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # read here: no waiter may be there to read it
            raise
        finally:
            del self._loading[conversion_id]
        future.set_result(template)
        self._keep(conversion_id, template, held_bytes(template, size))
        return template

    def _keep(self, conversion_id: str, template: Template, weight: int) -> None:
        if weight > self.max_bytes:
            return  # larger than the whole cache: used for this request only
        self._kept[conversion_id] = (template, weight)
        self.bytes += weight
        while self.bytes > self.max_bytes:
            _, (_, dropped) = self._kept.popitem(last=False)
            self.bytes -= dropped

    def forget(self, conversion_id: str) -> None:
        """Drop a conversion's template (its file was deleted)."""
        kept = self._kept.pop(conversion_id, None)
        if kept is not None:
            self.bytes -= kept[1]


def _load(path: Path) -> tuple[Template, int]:
    data = path.read_bytes()
    return Template(data), len(data)
