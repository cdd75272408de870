"""The mail-merge DAG's shape with tasks that do nothing: what ``airflow dags test`` costs on
this machine before any task of ours runs (start-up, parsing, the in-process API, each
task's start, and the process's exit). ``mail_merge_bench.py`` runs it beside the real DAG."""

from __future__ import annotations

from airflow.sdk import dag, task


@dag(dag_id="fillpdf_floor", schedule=None, catchup=False)
def fillpdf_floor() -> None:
    @task
    def check_input() -> None:
        return None

    @task
    def plan() -> list[dict[str, int]]:
        return [{"index": 0, "first": 1, "stop": 2}]

    @task
    def fill_chunk(chunk: dict[str, int]) -> dict[str, int]:
        return chunk

    @task
    def collect(chunks: list[dict[str, int]]) -> None:
        return None

    @task
    def check_manifest() -> None:
        return None

    chunks = plan()
    check_input() >> chunks
    collect(fill_chunk.expand(chunk=chunks)) >> check_manifest()


fillpdf_floor()
