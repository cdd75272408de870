"""``fillpdf --help`` as a first-time user reads it: every command says what it does, every
option what it takes, the examples run as written, and the plans are the service's own."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

import pytest

from fillpdf_provider.cli import EXAMPLES, PLAN_HELP, build_parser
from fillpdf_provider.service.plans import PLANS


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(found.choices)


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_command_describes_itself_and_every_option(command: str) -> None:
    parser = subcommands()[command]
    assert parser.description, f"fillpdf {command} --help has no description"
    bare = [
        "/".join(action.option_strings) or action.dest
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert not bare, f"fillpdf {command}: no help for {bare}"


def test_the_examples_parse_as_written() -> None:
    lines = [line.strip() for line in EXAMPLES.splitlines() if line.strip().startswith("fillpdf")]
    assert len(lines) >= 6
    parser = build_parser()
    for line in lines:
        words = shlex.split(line.split(">")[0], comments=True)[1:]
        parser.parse_args(words)  # exits 2 (SystemExit) on an example that no longer parses


def test_the_plans_in_help_are_the_services() -> None:
    for plan in PLANS.values():
        assert plan.name in PLAN_HELP
        for number in (plan.pages_included, plan.max_pages_per_file, plan.rate_limit_per_minute):
            if number is not None:
                assert f"{number} " in PLAN_HELP, (plan.name, number)
        if plan.overage_rate_usd:
            assert f"${plan.overage_rate_usd:.2f}" in PLAN_HELP
    assert "no overage" in PLAN_HELP and PLANS["developer"].hard_stop


def test_help_ends_with_examples() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fillpdf_provider.cli", "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "examples:\n  fillpdf convert" in done.stdout
    assert "fillpdf COMMAND --help" in done.stdout
