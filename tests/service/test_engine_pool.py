"""The admission of PDF jobs: at most ``max_children`` at once, whatever the queue does."""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fillpdf_provider.service.engine_pool import ClientGone, EnginePool
from fillpdf_provider.service.errors import ApiError


def _pool(queue_timeout_s: float, max_queue: int = 8) -> EnginePool:
    return EnginePool(
        max_children=1,
        max_queue=max_queue,
        queue_timeout_s=queue_timeout_s,
        memory_bytes=0,
        max_form_fields=10,
    )


async def _jobs(pool: EnginePool, count: int, hold_s: float) -> tuple[list[object], int]:
    running, peak = 0, 0

    async def job() -> str:
        nonlocal running, peak
        async with pool.slot():
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(hold_s)
            running -= 1
        return "ran"

    results = await asyncio.gather(*(job() for _ in range(count)), return_exceptions=True)
    return results, peak


def test_requests_that_wait_too_long_get_503_and_never_run_beside_the_one_running() -> None:
    pool = _pool(queue_timeout_s=0.1)

    async def run() -> tuple[list[object], int, list[object], int]:
        first, peak = await _jobs(pool, 3, 0.4)
        again, peak_again = await _jobs(pool, 3, 0.4)  # the slot count did not grow
        return first, peak, again, peak_again

    first, peak, again, peak_again = asyncio.run(run())
    for results in (first, again):
        assert results.count("ran") == 1, results
        busy = [r for r in results if isinstance(r, ApiError)]
        assert len(busy) == 2 and all(r.status == 503 for r in busy)
        assert all(int(r.headers["Retry-After"]) >= 1 for r in busy)
    assert peak == peak_again == 1


def test_a_client_that_hangs_up_while_queued_leaves_the_queue() -> None:
    pool = _pool(queue_timeout_s=120)

    async def run() -> tuple[type[BaseException] | None, int]:
        held, release = asyncio.Event(), asyncio.Event()

        async def hold() -> None:  # the slot is busy until the queued client has gone
            async with pool.slot():
                held.set()
                await release.wait()

        holder = asyncio.create_task(hold())
        await held.wait()
        gone: asyncio.Task[None] = asyncio.create_task(asyncio.sleep(0.05))
        caught: type[BaseException] | None = None
        try:  # noticed when the client goes, not when the queue's wait runs out
            async with asyncio.timeout(60), pool.slot(gone):
                pass
        except ClientGone:
            caught = ClientGone
        release.set()
        await holder
        _, peak = await _jobs(pool, 2, 0.05)  # one slot still, and it is free
        return caught, peak

    caught, peak = asyncio.run(run())
    assert caught is ClientGone
    assert peak == 1


def test_a_full_queue_refuses_at_once() -> None:
    pool = _pool(queue_timeout_s=5, max_queue=1)
    results, peak = asyncio.run(_jobs(pool, 4, 0.2))
    assert results.count("ran") == 2 and peak == 1  # one running, one queued
    assert sum(isinstance(r, ApiError) for r in results) == 2


def test_the_slot_is_free_after_a_job_fails() -> None:
    pool = _pool(queue_timeout_s=1)

    async def run() -> int:
        with pytest.raises(RuntimeError):
            async with pool.slot():
                raise RuntimeError("the job failed")
        _, peak = await _jobs(pool, 2, 0.0)
        return peak

    assert asyncio.run(run()) == 1


SCRIPT = """
import asyncio, sys, tempfile
from pathlib import Path
from fillpdf_provider.service import Settings, create_app

async def main():
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(Settings(data_dir=Path(folder)))
        async with app.router.lifespan_context(app):
            print("started")

{start}
"""


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "unguarded"])
def test_a_script_whose_workers_cannot_start_is_told_why_not_blamed_on_a_file(
    tmp_path: Path, guarded: bool
) -> None:
    """Fill workers re-import the main script; one without a main guard starts the service
    again in every worker, which dies. That used to read "the file ... is damaged"."""
    start = (
        'if __name__ == "__main__":\n    asyncio.run(main())' if guarded else "asyncio.run(main())"
    )
    script = tmp_path / "serve_it.py"
    script.write_text(SCRIPT.format(start=start))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    if guarded:
        assert done.returncode == 0 and done.stdout.strip() == "started", done.stderr
        return
    assert done.returncode != 0 and "started" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("fillpdf_provider.service.engine_pool.ChildStartError: A PDF child")
    assert 'must start the service under `if __name__ == "__main__":`' in last
    assert "damaged" not in last


WARM_UP = """
import asyncio, sys
from fillpdf_provider.service.engine_pool import EnginePool

async def main(memory):
    pool = EnginePool(
        max_children=1, max_queue=0, queue_timeout_s=1, memory_bytes=memory, max_form_fields=10
    )
    try:
        await pool.warm_up()
        print("started")
    finally:
        pool.close()

if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
"""


def test_a_worker_that_cannot_set_its_limit_says_so(tmp_path: Path) -> None:
    """A worker that answers with its own failure is not told to add a __main__ guard."""
    script = tmp_path / "warm_up.py"
    script.write_text(WARM_UP)
    ceiling = 8 * 1024**3

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))

    done = subprocess.run(
        [sys.executable, str(script), str(2 * ceiling)],
        capture_output=True, text=True, timeout=120, preexec_fn=capped,
    )  # fmt: skip
    assert done.returncode != 0 and "started" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("fillpdf_provider.service.engine_pool.ChildStartError: A PDF child")
    assert "ValueError" in last and "FILLPDF_ENGINE_MEMORY_MB" in last and "ulimit -v" in last
    assert "__main__" not in last
    fits = subprocess.run(
        [sys.executable, str(script), str(ceiling // 2)],
        capture_output=True, text=True, timeout=120, preexec_fn=capped,
    )  # fmt: skip
    assert fits.returncode == 0 and fits.stdout.strip() == "started", fits.stderr
