"""cli_args.py: the range-checked option types, and the usage error a value out of range gives."""

from __future__ import annotations

import argparse

import pytest

from qwen_desktop import cli_args
from qwen_desktop.cli import main


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [
        (cli_args.threads, "0", 0),
        (cli_args.context, "131072", 131072),
        (cli_args.tokens, "1", 1),
        (cli_args.seed, str(2**63 - 1), 2**63 - 1),
        (cli_args.temperature, "0", 0.0),
        (cli_args.top_p, "1", 1.0),
        (cli_args.top_k, "0", 0),
        (cli_args.min_p, "0.5", 0.5),
        (cli_args.repetition_penalty, "1.05", 1.05),
    ],
)
def test_a_value_in_range_is_taken(parse, text, value):
    assert parse(text) == value


@pytest.mark.parametrize(
    ("parse", "text", "says"),
    [
        (cli_args.context, "0", "from 1 to 131072"),
        (cli_args.tokens, "131073", "from 1 to 131072"),
        (cli_args.seed, "-1", "from 0 to"),
        (cli_args.top_k, "-1", "at least 0"),
        (cli_args.tokens, "1.5", "not a whole number"),
        (cli_args.temperature, "-0.1", "at least 0.0"),
        (cli_args.temperature, "nan", "finite"),
        (cli_args.temperature, "inf", "finite"),
        (cli_args.top_p, "0", "more than 0.0 and at most 1.0"),
        (cli_args.min_p, "1.01", "at most 1.0"),
        (cli_args.repetition_penalty, "0", "more than 0.0"),
        (cli_args.min_p, "lots", "not a number"),
    ],
)
def test_a_value_out_of_range_names_the_range(parse, text, says):
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        parse(text)


def test_threads_are_capped_at_this_machines_cpus():
    top = cli_args.max_threads()
    assert cli_args.threads(str(top)) == top
    with pytest.raises(argparse.ArgumentTypeError, match=f"from 0 to {top}"):
        cli_args.threads(str(top + 1))


def test_an_out_of_range_option_is_a_usage_error_before_anything_loads(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["chat", "--model", str(tmp_path / "absent"), "--top-p", "0", "--prompt", "hi"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--top-p" in err and "out of range" in err
    assert "absent" not in err, "the model must not be looked at before the options are checked"
