"""``metacog analyze``'s flags come from AnalysisOptions' fields: one source for flags, defaults,
help and validation."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from metacog_metrics import AnalysisOptions, option_spec
from metacog_tasks.cli import build_parser, main

#: What `metacog analyze` parses that is not an AnalysisOptions field: files and tracking.
NOT_OPTIONS = {"paths", "out_dir", "models_file", "report", "overwrite", "mlflow_uri",
               "mlflow_experiment"}  # fmt: skip


def _analyze_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices["analyze"]
    parser.format_help()  # its flags are added when it is first used
    return parser


def _parsed(*flags: str) -> dict:
    args = build_parser().parse_args(["analyze", "r.csv", "--out", "o", *flags])
    return {k: v for k, v in vars(args).items() if k not in ("command", "func")}


def test_every_option_field_has_one_flag_with_its_help():
    actions = {a.dest: a for a in _analyze_parser()._actions}
    for field in dataclasses.fields(AnalysisOptions):
        spec = option_spec(field)
        assert spec is not None and spec.help, field.name
        action = actions[field.name]
        assert action.help.startswith(spec.help.replace("%", "%%")), field.name
        assert action.default is argparse.SUPPRESS  # the dataclass's default holds
    assert actions["joint_permutations"].option_strings == ["--joint-permutations"]
    assert actions["progress"].option_strings == ["--quiet", "-q"]
    # what the help says of the joint draws: they are also the private-signal test's
    assert "private-signal test" in actions["joint_permutations"].help


def test_other_commands_do_not_import_the_analysis():
    import subprocess
    import sys

    code = ("import sys; from metacog_tasks.cli import build_parser; "
            "build_parser().parse_args(['include-path']); "
            "assert 'metacog_metrics.analyze' not in sys.modules")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_flag_given_leaves_every_option_to_the_dataclass():
    given = _parsed()
    assert set(given) == NOT_OPTIONS


def test_flags_are_parsed_to_the_fields_types():
    given = _parsed("--permutations", "99", "--joint-permutations", "7", "--pool", "--quiet",
                    "--min-coverage", "0", "--contentious-bounds", "0.2,0.8", "--deltas",
                    "0,0.5", "--workers", "2", "--engine", "numpy", "--alternative", "greater",
                    "--numeric-levels", "0", "--binarize-at", "0.7", "--n-boot", "5",
                    "--fdr-alpha", "0.1", "--seed", "3")  # fmt: skip
    options = AnalysisOptions(**{k: v for k, v in given.items() if k not in NOT_OPTIONS})
    assert options == AnalysisOptions(
        permutations=99, joint_permutations=7, pool=True, progress=False, min_coverage=None,
        contentious_bounds=(0.2, 0.8), deltas=(0.0, 0.5), workers=2, engine="numpy",
        alternative="greater", numeric_levels=0, binarize_at=0.7, n_boot=5, fdr_alpha=0.1,
        seed=3,
    )  # fmt: skip


def test_choices_are_checked_by_argparse(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["analyze", "r.csv", "--out", "o", "--engine", "cuda"])
    assert "invalid choice: 'cuda'" in capsys.readouterr().err


def test_a_bad_value_fails_with_the_fields_own_check_before_any_file_is_read(tmp_path, capsys):
    code = main(["analyze", str(tmp_path / "absent.csv"), "--out", str(tmp_path / "o"),
                 "--numeric-levels", "1"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "numeric_levels must be 0 or an integer from 2 to 8, got 1" in err
    assert not (tmp_path / "o").exists()


def test_the_docstring_lists_every_field_from_its_help():
    doc = AnalysisOptions.__doc__
    for field in dataclasses.fields(AnalysisOptions):
        assert f"\n    {field.name}: " in doc, field.name
