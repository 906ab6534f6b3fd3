"""The flags of ``metacog analyze``, ``metacog simulate`` and ``metacog power`` come from their
options dataclasses' fields (AnalysisOptions, SimulateOptions, PowerOptions): one source for flags,
defaults, help and validation."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from metacog_metrics import AnalysisOptions, PowerOptions, option_spec, option_values
from metacog_tasks.cli import build_parser, main
from metacog_tasks.sim.presets import SimulateOptions

#: What `metacog analyze` parses that is not an AnalysisOptions field: files and tracking.
NOT_OPTIONS = {"paths", "out_dir", "models_file", "report", "overwrite", "mlflow_uri",
               "mlflow_experiment"}  # fmt: skip


def _parser(command: str = "analyze") -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[command]
    parser.format_help()  # its flags are added when it is first used
    return parser


def _parsed(*flags: str) -> dict:
    args = build_parser().parse_args(["analyze", "r.csv", "--out", "o", *flags])
    return {k: v for k, v in vars(args).items() if k not in ("command", "func")}


def test_every_option_field_has_one_flag_with_its_help():
    actions = {a.dest: a for a in _parser()._actions}
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


# --------------------------------------------------------------------------------------------
# metacog simulate and metacog power

#: Per command: its options dataclass and the arguments that are not its fields (the output).
OPTIONS = {"simulate": (SimulateOptions, ("out",)), "power": (PowerOptions, ("out_dir",))}


@pytest.mark.parametrize("command", list(OPTIONS))
def test_simulate_and_power_flags_are_their_options_fields(command):
    cls, _ = OPTIONS[command]
    actions = {a.dest: a for a in _parser(command)._actions}
    for field in dataclasses.fields(cls):
        spec = option_spec(field)
        assert spec is not None and spec.help, field.name
        if not spec.on_cli:
            assert field.name not in actions, field.name
            continue
        assert actions[field.name].help.startswith(spec.help.replace("%", "%%")), field.name
        assert actions[field.name].default is argparse.SUPPRESS  # the dataclass's default holds
        assert f"\n    {field.name}: " in cls.__doc__, field.name
    assert actions["progress" if command == "power" else "items_per_benchmark"].option_strings \
        == (["--quiet", "-q"] if command == "power" else ["--items"])  # fmt: skip


def _call(argv: list[str]) -> dict:
    """What the command hands its function: the output, then every option's value."""
    args = build_parser().parse_args(argv)
    cls, first = OPTIONS[args.command]
    given = {k: v for k, v in vars(args).items() if k not in ("command", "func")}
    kept = {k: given.pop(k) for k in first}
    fields = {f.name for f in dataclasses.fields(cls) if option_spec(f).on_cli}
    values = {k: v for k, v in option_values(cls(**given)).items() if k in fields}
    # sequences as the hand-written parser gave them (lists; the dataclasses hold tuples)
    return {**kept, **{k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}}


#: Command lines and what the hand-written parsers (before the options dataclasses) parsed.
BEFORE = [
    (["simulate", "-o", "r.parquet"],
     {"out": "r.parquet", "preset": "paper", "models": 20, "items_per_benchmark": 500,
      "benchmarks": None, "individuated": None, "probes": ["prospective"], "seed": 0}),
    (["simulate", "--out", "r.csv", "--preset", "rasch", "--models", "7", "--items", "40",
      "--benchmarks", "squad,gsm8k", "--individuated", "0.3", "--probes", "prospective,numeric",
      "--seed", "5"],
     {"out": "r.csv", "preset": "rasch", "models": 7, "items_per_benchmark": 40,
      "benchmarks": ["squad", "gsm8k"], "individuated": 0.3,
      "probes": ["prospective", "numeric"], "seed": 5}),
    (["power"],
     {"out_dir": "metacog-power", "models": [10, 20, 40], "items": [200, 1000, 5000],
      "individuated": [0.0, 0.1, 0.2, 0.4], "reps": 200, "preset": "paper", "alpha": 0.05,
      "permutations": 99, "alignment_reps": 40, "alignment_null_reps": 200,
      "null": "private_signal", "block_size": 2, "size_presets": ["rasch", "2pl", "3pl"],
      "size_reps": None, "seed": 0, "progress": True}),
    (["power", "-o", "pw", "--models", "5,10", "--items", "80,200", "--individuated", "0,0.5",
      "--reps", "3", "--preset", "2pl", "--alpha", "0.1", "--permutations", "19",
      "--alignment-reps", "0", "--alignment-null-reps", "12", "--null",
      "difficulty_stratified", "--block-size", "4", "--size-presets", "2pl,3pl",
      "--size-reps", "3", "--seed", "2", "--quiet"],
     {"out_dir": "pw", "models": [5, 10], "items": [80, 200], "individuated": [0.0, 0.5],
      "reps": 3, "preset": "2pl", "alpha": 0.1, "permutations": 19, "alignment_reps": 0,
      "alignment_null_reps": 12, "null": "difficulty_stratified", "block_size": 4,
      "size_presets": ["2pl", "3pl"], "size_reps": 3, "seed": 2, "progress": False}),
    (["power", "--size-presets", "none", "-q"],
     {"out_dir": "metacog-power", "models": [10, 20, 40], "items": [200, 1000, 5000],
      "individuated": [0.0, 0.1, 0.2, 0.4], "reps": 200, "preset": "paper", "alpha": 0.05,
      "permutations": 99, "alignment_reps": 40, "alignment_null_reps": 200,
      "null": "private_signal", "block_size": 2, "size_presets": ["none"], "size_reps": None,
      "seed": 0, "progress": False}),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "before"), BEFORE, ids=lambda x: " ".join(x)[:40])
def test_command_lines_parse_to_what_they_did(argv, before):
    got = _call(argv)
    assert got == before
    # the same types: ints stay ints, weights floats
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in before.items()}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["simulate", "--models", "0"], "models must be an integer >= 1, got 0"),
        (["simulate", "--items", "-5"], "items_per_benchmark must be an integer >= 1, got -5"),
        (["simulate", "--individuated", "2"], "individuated must lie in [0, 1], got 2.0"),
        (["simulate", "--probes", "prospective,bogus"], "probes: unknown probes ['bogus']"),
        (["simulate", "--probes", ""], "probes must name one or more probes, got ()"),
        (["simulate", "--preset", "bogus"], "preset must be one of paper, individuated"),
        (["power", "--reps", "0"], "reps must be an integer >= 1, got 0"),
        (["power", "--models", "0"], "models: values must be >= 3, got [0]"),
        (["power", "--items", "-5"], "items: values must be >= 10, got [-5]"),
        (["power", "--individuated", "0,2"], "individuated: weights must lie in [0, 1], got [2.0]"),
        (["power", "--alpha", "2"], "alpha must lie in (0, 1), got 2.0"),
        (["power", "--permutations", "5"], "permutations must be >= 1/alpha - 1 = 19"),
        (["power", "--size-presets", "rasch,bogus"], "size_presets: unknown preset(s) ['bogus']"),
        (["power", "--alignment-null-reps", "1"], "alignment_null_reps must be an integer >= 2"),
    ],
)
def test_a_bad_value_is_the_commands_one_line_error_and_nothing_is_written(
    argv, message, tmp_path, capsys
):
    out = tmp_path / ("r.parquet" if argv[0] == "simulate" else "power")
    assert main([*argv, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"metacog {argv[0]}: error: ")
    assert captured.err.count("\n") == 1 and message in captured.err, captured.err
    assert captured.out == "" and list(tmp_path.iterdir()) == []


def test_simulate_writes_what_its_python_api_writes(tmp_path, capsys):
    import pandas as pd

    from metacog_tasks.sim.presets import simulate_benchmarks

    cli = tmp_path / "cli.parquet"
    argv = ["simulate", "-o", str(cli), "--models", "3", "--items", "12", "--benchmarks",
            "squad,gsm8k", "--probes", "prospective,numeric", "--seed", "2"]  # fmt: skip
    assert main(argv) == 0
    assert "wrote 144 records (3 models x 2 benchmarks" in capsys.readouterr().out
    # the keywords of existing callers, and an options object, give the same table
    api = simulate_benchmarks(tmp_path / "api.parquet", models=3, items_per_benchmark=12,
                              benchmarks=["squad", "gsm8k"], probes=["prospective", "numeric"],
                              seed=2)  # fmt: skip
    opts = SimulateOptions(models=3, items_per_benchmark=12, benchmarks=("squad", "gsm8k"),
                           probes=("prospective", "numeric"), seed=2)  # fmt: skip
    obj = simulate_benchmarks(tmp_path / "obj.parquet", opts)
    table = pd.read_parquet(cli)
    assert len(table) == 144 and api.n_rows == obj.n_rows == 144
    pd.testing.assert_frame_equal(table, pd.read_parquet(api.path))
    pd.testing.assert_frame_equal(table, pd.read_parquet(obj.path))
    with pytest.raises(TypeError, match="unknown option"):
        simulate_benchmarks(tmp_path / "x.parquet", items=12)
