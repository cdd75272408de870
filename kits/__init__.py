"""Test kits: the helpers that build forms (formkit, flatkit, formedit, hostile), check what a
person would see on them (viewcheck), and start the real parts the code runs against (a
``fillpdf serve`` in servicekit, PostgreSQL in pgcluster, an S3 server in s3server, Airflow in
airflowkit and celerykit), plus the CLI runner (cli_support) and the schema contract (contract).

They are not tests. ``tests/``, ``benchmarks/`` and ``include/make_samples.py`` share them, each
importing them the same way, from the repository root: ``from kits.formkit import bench_form``.
"""
