"""A new user's first commands: version, help, one-line errors that say what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_tasks.cli import build_parser, main

FAST = ["--permutations", "9", "--joint-permutations", "9", "--quiet"]


def _records(path: Path, n_models: int = 4, n_items: int = 30) -> Path:
    rng = np.random.default_rng(0)
    pd.DataFrame(
        [
            {
                "model": f"m{m}",
                "item_id": f"q{i}",
                "confidence": int(rng.random() < 0.5),
                "correct": int(rng.random() < 0.5),
            }
            for m in range(n_models)
            for i in range(n_items)
        ]
    ).to_csv(path, index=False)
    return path


def test_version_and_bare_command_print_and_exit_0(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"metacog {version('metacog-eval')}"
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: metacog") and "demo" in out and "analyze" in out
    assert "https://" in out  # the guides, as an address a wheel user can open


def test_preset_help_lists_the_presets(capsys):
    from metacog_metrics.simulate import PRESETS

    for command in ("demo", "simulate", "power"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert f"one of {', '.join(PRESETS)}" in text, command


def test_help_links_are_absolute(capsys):
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    text = "".join(capsys.readouterr().out.split())
    assert "docs/gate.md" in text and "https://" in text
    assert " docs/" not in " ".join(build_parser().format_help().split())


def test_project_urls_agree_with_the_help_links():
    import tomllib

    from metacog_tasks._links import DOCS, ISSUES, REPOSITORY

    urls = tomllib.loads(Path("pyproject.toml").read_text())["project"]["urls"]
    assert urls["Repository"] == REPOSITORY and urls["Issues"] == ISSUES
    assert urls["Documentation"].startswith(REPOSITORY) and DOCS.startswith(REPOSITORY)


def test_analyze_on_a_folder_points_to_collect(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    assert main(["analyze", str(tmp_path / "runs"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a folder" in err
    assert f"metacog collect {tmp_path / 'runs'} -o records.parquet" in err
    assert not (tmp_path / "o").exists()


def test_a_models_file_naming_no_model_warns_on_the_terminal(tmp_path, capsys):
    src = _records(tmp_path / "r.csv")
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  gpt-4o: {reasoning: false}\n  o3: {reasoning: true}\n")
    args = ["analyze", str(src), "--out", str(tmp_path / "o"), "--models", str(models), *FAST]
    assert main(args) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "warning:" in ln]
    assert len(lines) == 1, err  # not again as "not in the records" and "no reasoning flag"
    assert "none of its 2 model name(s) is in the records" in lines[0]
    assert "names must match exactly" in lines[0]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any("no reasoning flag" in w for w in summary["warnings"])  # the summary keeps all


def test_permutations_0_says_no_test_was_run(tmp_path, capsys):
    src = _records(tmp_path / "r.csv")
    assert (
        main(
            [
                "analyze",
                str(src),
                "--out",
                str(tmp_path / "o"),
                "--permutations",
                "0",
                "--joint-permutations",
                "0",
                "--quiet",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "no permutation test run (--permutations 0)" in out
    assert "% of pairs FDR-significant" not in out


def test_p_values_print_in_one_format(tmp_path, capsys):
    from metacog_metrics._conventions import format_p

    src = _records(tmp_path / "r.csv")
    assert main(["analyze", str(src), "--out", str(tmp_path / "o"), *FAST]) == 0
    head = capsys.readouterr().out.split("Findings:")[0]
    assert "(p=" not in head and "p = " in head
    assert [format_p(p) for p in (0.00599, 0.000999, 0.002, None)] == [
        "p = 0.00599",
        "p < 0.001",
        "p = 0.002",
        "p n/a",
    ]


def test_collect_checks_the_output_extension_before_reading(tmp_path, capsys):
    missing = tmp_path / "no-such-folder"
    assert main(["collect", str(missing), "-o", str(tmp_path / "r.txt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("r.txt: unsupported file type; use .parquet or .csv")
    assert len(err.splitlines()) == 1


def test_a_missing_extra_is_named_in_one_line(tmp_path):
    """As on the core install (torch, TRL, mlflow blocked here): one line naming the extra."""
    block = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'trl', 'transformers', 'mlflow'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from metacog_tasks.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    config = Path("examples/rlmf/tiny-cpu.yaml").resolve()
    src = _records(tmp_path / "r.csv")
    cases = {
        "metacog-eval[rlmf]": ["rlmf", "train", "--config", str(config)],
        "metacog-eval[hf]": [
            "lm-eval",
            "run",
            "--model",
            "hf",
            "--model_args",
            "pretrained=ORG/MODEL",
            "--tasks",
            "metacog_*",
            "--output_path",
            "runs/",
        ],
        "metacog-eval[mlflow]": ["analyze", str(src), "--out", "o", "--mlflow", "file:./mlruns"],
    }
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    for extra, args in cases.items():
        proc = subprocess.run(
            [sys.executable, "-c", block, *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
            env=env,
        )
        assert proc.returncode == 2, proc.stderr[-2000:]
        err = proc.stderr.strip().splitlines()
        assert len(err) == 1 and f"pip install '{extra}'" in err[-1], (extra, err)
        if "mlflow" not in extra:
            assert "--index-url https://download.pytorch.org/whl/cpu" in err[-1]
    assert not (tmp_path / "o").exists()  # refused before the analysis, not after it
