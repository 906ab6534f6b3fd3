"""``metacog gate``, ``gate bless`` and ``gate plan`` through the real command line: record tables
of the simulated population, real lm-eval output trees and Inspect logs (epochs pooled), baseline
files; exit codes, reports, the settings' flags and the GitHub integration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from lxml import etree

from metacog_metrics import RecordError, write_records
from metacog_metrics.gate import gate_settings_help, plan_from_items
from metacog_metrics.gate.baseline import (
    BASELINE_FORMAT,
    read_baseline,
    version_warnings,
    write_baseline,
)
from metacog_metrics.records import validate_records
from metacog_metrics.simulate import simulate_records
from metacog_tasks.cli import build_parser, main
from metacog_tasks.gate_command import COMMENT_LIMIT
from metacog_tasks.sim import preset_params

SCHEMA = Path(__file__).parent / "data" / "jenkins-junit-10.xsd"
# Inspect's own retry set-up warns on every model call (tenacity API change).
pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)
BENCHES = ["squad", "mmlu_pro"]


def _metacog(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """The real ``metacog`` process (its exit status is what CI sees)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "metacog_tasks.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", **(env or {})},
    )


@pytest.fixture
def metacog(monkeypatch, capsys):
    """``metacog`` in this process (the same parser and code; no interpreter start-up)."""

    def run(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
        for key in [k for k in os.environ if k.startswith("GITHUB_")]:
            monkeypatch.delenv(key)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["metacog", *args], code, out, err)

    return run


def _sim(ss: int | None = None, models: int = 4, **overrides) -> pd.DataFrame:
    df = simulate_records(
        preset_params("paper", **overrides), n_models=models, items_per_benchmark=400,
        benchmarks=BENCHES, seed=0, sampling_seed=ss, probes=("prospective", "numeric"),
    )  # fmt: skip
    return validate_records(df[df["model"] == "m03"] if models == 4 else df)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Record tables: the baseline, a same-model rerun, a degraded candidate; a fast config."""
    d = tmp_path_factory.mktemp("gate-runs")
    base = _sim().assign(prompt_hash="p1", task_version="1.0")
    write_records(base, d / "base.parquet")
    write_records(_sim(11).assign(prompt_hash="p1", task_version="1.0"), d / "rerun.pq")
    write_records(_sim(7, reading_noise_sd=4.0), d / "noisy.csv")
    write_records(_sim(models=8), d / "population.parquet")  # m01 .. m08
    changed = base[base["item_id"] != "mmlu_pro-00017"].copy()
    changed.loc[changed["benchmark"] == "squad", "prompt_hash"] = "p2"
    write_records(changed, d / "changed.parquet")
    (d / "gate.yaml").write_text("n_boot: 300\nseed: 1\n")
    (d / "strict.yaml").write_text("n_boot: 300\nrule: noninferiority\ninconclusive: fail\n")
    return d


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


# ------------------------------------------------------------------------------ verdicts


def test_a_run_against_itself_passes_and_every_report_agrees(runs: Path, tmp_path) -> None:
    proc = _metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "base.parquet"),
        "--config", str(runs / "gate.yaml"), "--junit", "j.xml", "--markdown", "s.md",
        "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("metacog gate: PASS (exit 0): m03 vs baseline m03")
    verdict = _json(tmp_path / "v.json")
    assert verdict["exit_code"] == 0 and verdict["status"] == "pass"
    assert verdict["inputs"]["baseline"]["kind"] == "record table"
    xml = etree.parse(str(tmp_path / "j.xml"))
    assert etree.XMLSchema(etree.parse(str(SCHEMA))).validate(xml)
    assert xml.getroot().get("failures") == "0"
    assert (tmp_path / "s.md").read_text().startswith("## ✅ metacog gate: PASS (exit 0)")


def test_degraded_confidence_fails_on_auroc_with_a_readable_reason(
    runs: Path, tmp_path, metacog
) -> None:
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "noisy.csv"),
        "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "metacog gate: FAIL (exit 1)" in proc.stdout.splitlines()[-1]
    assert "Regressions:" in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if "regression: auroc" in x)
    assert "significant at Holm's level" in line
    failed = {t["metric"] for t in _json(tmp_path / "v.json")["tests"] if t["verdict"] == "fail"}
    assert "auroc" in failed and "accuracy" not in failed  # the noise is in confidence only


def test_a_reference_population_adds_the_internal_pop_gap(runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "rerun.pq"),
        "--config", str(runs / "gate.yaml"), "--population", str(runs / "population.parquet"),
        "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    gaps = [t for t in _json(tmp_path / "v.json")["tests"] if t["metric"] == "internal_pop_gap"]
    assert len(gaps) == 4 and all(t["verdict"] != "fail" for t in gaps)


def test_a_rerun_inside_noise_passes_and_the_old_rule_can_exit_3(
    runs: Path, tmp_path, metacog
) -> None:
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "rerun.pq"),
        "--config", str(runs / "gate.yaml"), "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    verdict = _json(tmp_path / "v.json")
    assert verdict["status"] == "pass" and not any(t["verdict"] == "fail" for t in verdict["tests"])
    strict = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "rerun.pq"),
        "--config", str(runs / "strict.yaml"), cwd=tmp_path,
    )  # fmt: skip
    assert strict.returncode == 3
    assert "metacog gate: INCONCLUSIVE (exit 3)" in strict.stdout.splitlines()[-1]


def test_mismatched_items_and_templates_exit_2_naming_them(runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate",
        str(runs / "changed.parquet"), "--junit", "j.xml", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    out = proc.stdout
    assert "metacog gate: ERROR (exit 2)" in out.splitlines()[-1]
    assert (
        "mmlu_pro/prospective/verbal_binary: 1 item(s) only in the baseline ('mmlu_pro-00017'); "
        "compared without them" in out
    )
    assert (
        "squad/prospective/verbal_binary: prompt_hash (prompt template) differs on 400 of 400"
        in out
    )
    assert "p1 vs p2" in out
    error = etree.parse(str(tmp_path / "j.xml")).find(".//testcase/error")
    assert "prompt_hash" in error.text
    assert etree.XMLSchema(etree.parse(str(SCHEMA))).validate(etree.parse(str(tmp_path / "j.xml")))
    shared = runs / "shared.yaml"
    shared.write_text("n_boot: 300\nallow_shared_items: true\ncheck: [task_version]\n")
    ok = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate",
        str(runs / "changed.parquet"), "--config", str(shared), cwd=tmp_path,
    )  # fmt: skip
    assert ok.returncode == 0 and "compared without them" in ok.stdout
    tight = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate",
        str(runs / "changed.parquet"), "--config", str(shared), "--max-missing-items", "0",
        cwd=tmp_path,
    )  # fmt: skip
    assert tight.returncode == 0 and "compared on the 1598 shared item(s) only" in tight.stdout


def test_unusable_inputs_exit_2_and_still_write_the_reports(runs: Path, tmp_path, metacog) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("marginz: {auroc: 0.1}\n")
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", "nowhere/",
        "--config", str(bad), "--json", "v.json", "--junit", "j.xml", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "'marginz' (did you mean 'margins'?)" in proc.stdout
    assert _json(tmp_path / "v.json")["status"] == "error"
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", "nowhere/",
        "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2 and "candidate nowhere/: no such file or folder" in proc.stdout
    assert _json(tmp_path / "v.json")["refusals"] == ["candidate nowhere/: no such file or folder"]
    several = metacog(
        "gate", "--baseline", str(runs / "population.parquet"), "--candidate",
        str(runs / "base.parquet"), cwd=tmp_path,
    )  # fmt: skip
    assert several.returncode == 2
    assert (
        "holds 8 models (m01, m02, m03, m04, m05, m06, m07, m08); choose one with --baseline-model"
        in several.stdout
    )
    unknown = metacog(
        "gate", "--baseline", str(runs / "population.parquet"), "--baseline-model", "m3",
        "--candidate", str(runs / "base.parquet"), cwd=tmp_path,
    )  # fmt: skip
    assert unknown.returncode == 2 and "no model 'm3' (did you mean 'm03'?)" in unknown.stdout
    usage = metacog("gate", "--baseline", str(runs / "base.parquet"), cwd=tmp_path)
    assert usage.returncode == 2 and "--candidate" in usage.stderr
    (tmp_path / "afile").write_text("")  # a report that cannot be written: 2, not 1
    crash = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate",
        str(runs / "base.parquet"), "--json", str(tmp_path / "afile" / "v.json"),
        "--config", str(runs / "gate.yaml"), cwd=tmp_path,
    )  # fmt: skip
    assert crash.returncode == 2 and "internal error (exit 2)" in crash.stderr


def test_github_actions_get_annotations_and_the_step_summary(runs: Path, tmp_path, metacog) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step output\n")
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "noisy.csv"),
        "--candidate-model", "m03", "--config", str(runs / "gate.yaml"), cwd=tmp_path,
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert proc.returncode == 1
    errors = [x for x in proc.stdout.splitlines() if x.startswith("::error ")]
    assert errors and any("auroc regressed" in x for x in errors)
    assert len(errors) <= 10
    text = summary.read_text()
    assert text.startswith("earlier step output\n## ❌ metacog gate: FAIL (exit 1)")
    # --markdown naming the summary file appends too (once)
    metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "base.parquet"),
        "--config", str(runs / "gate.yaml"), "--markdown", str(summary), cwd=tmp_path,
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert summary.read_text().startswith(text) and summary.read_text().count("PASS (exit 0)") == 1


# ------------------------------------------------------------------------------ baselines


def test_bless_then_gate_against_the_baseline_file(runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "bless", str(runs / "base.parquet"), "-o", "baseline.json",
        "--config", str(runs / "gate.yaml"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "blessed m03: 1600 records, 800 items, 4 benchmark/probe/kind group(s)" in proc.stdout
    lines = (tmp_path / "baseline.json").read_text().splitlines()
    assert f'"format": "{BASELINE_FORMAT}",' in lines[1]
    assert sum(line.startswith("    [") for line in lines) == 1600  # one record per line
    verdicts = []
    for base in ("baseline.json", str(runs / "base.parquet")):
        proc = metacog(
            "gate", "--baseline", base, "--candidate", str(runs / "noisy.csv"),
            "--candidate-model", "m03", "--config", str(runs / "gate.yaml"), "--json", "v.json",
            cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 1
        verdicts.append(_json(tmp_path / "v.json"))
    assert verdicts[0]["tests"] == verdicts[1]["tests"]  # the file holds the same items
    assert verdicts[0]["inputs"]["baseline"]["kind"] == "baseline file"
    other = metacog(
        "gate", "--baseline", "baseline.json", "--candidate", str(runs / "base.parquet"),
        cwd=tmp_path,
    )  # fmt: skip
    assert other.returncode == 0 and "blessed with other gate settings" in other.stdout


def test_tables_without_a_probe_column_are_unspecified_and_take_a_named_probe(
    runs: Path, tmp_path, metacog
) -> None:
    # A record table without a probe column: its records' probe is 'unspecified' in the
    # baseline it blesses and in the verdict, as in `metacog analyze`; --probe declares it.
    # Against a side that names its one probe (e.g. a baseline blessed before such tables
    # were read so: it holds 'prospective'), they take that probe, with a note.
    base = pd.read_parquet(runs / "base.parquet")
    unnamed = base[base["probe"] == "prospective"].drop(columns="probe")
    unnamed.to_csv(tmp_path / "noprobe.csv", index=False)  # (write_records names the probe)
    write_records(base[base["probe"] == "prospective"], tmp_path / "named.parquet")
    proc = metacog("gate", "bless", "noprobe.csv", "-o", "b.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "  squad/unspecified/verbal_binary: 400" in proc.stdout
    assert set(read_baseline(tmp_path / "b.json").records["probe"]) == {"unspecified"}
    config = ("--config", str(runs / "gate.yaml"), "--json", "v.json")
    same = metacog("gate", "--baseline", "b.json", "--candidate", "noprobe.csv", *config,
                   cwd=tmp_path)  # fmt: skip
    assert same.returncode == 0, same.stdout
    probes = {(t["benchmark"], t["probe"]) for t in _json(tmp_path / "v.json")["tests"]}
    assert probes - {("squad", "solve"), ("mmlu_pro", "solve")} == {
        ("squad", "unspecified"),
        ("mmlu_pro", "unspecified"),
    }
    assert "name no probe" not in same.stdout
    named = "named.parquet"
    for args in (("--baseline", named, "--candidate", "noprobe.csv"),
                 ("--baseline", "b.json", "--candidate", named)):  # fmt: skip
        proc = metacog("gate", *args, *config, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout
        side, other = ("candidate", "baseline") if args[1] == named else ("baseline", "candidate")
        assert (
            f"{side}: the records of squad (verbal_binary) name no probe; compared as the "
            f"{other}'s 'prospective' (declare it with --probe prospective)"
        ) in proc.stdout
        probes = {t["probe"] for t in _json(tmp_path / "v.json")["tests"]}
        assert probes == {"solve", "prospective"}
    declared = metacog("gate", "--baseline", named, "--candidate", "noprobe.csv", "--probe",
                       "prospective", *config, cwd=tmp_path)  # fmt: skip
    assert declared.returncode == 0 and "name no probe" not in declared.stdout
    blessed = metacog("gate", "bless", "noprobe.csv", "-o", "p.json", "--probe", "retrospective",
                      cwd=tmp_path)  # fmt: skip
    assert blessed.returncode == 0, blessed.stderr
    assert set(read_baseline(tmp_path / "p.json").records["probe"]) == {"retrospective"}


def test_baseline_files_round_trip_and_refuse_damage(tmp_path) -> None:
    recs = _sim().iloc[:50].copy()
    recs.loc[recs.index[:3], "confidence"] = np.nan  # unparseable
    recs.loc[recs.index[3], "correct"] = np.nan  # ungraded
    recs = validate_records(recs.assign(doc_hash="d", prompt_hash="p", task_version="1.0"))
    written = write_baseline(recs, tmp_path / "b.json", versions={"lm_eval": "0.4.13"})
    back = read_baseline(tmp_path / "b.json")
    assert back.model == "m03" and back.versions == {"lm_eval": "0.4.13"}
    cols = ["benchmark", "probe", "confidence_kind", "item_id", "confidence", "correct"]
    key = ["benchmark", "probe", "confidence_kind", "item_id"]
    a = recs[cols].sort_values(key).reset_index(drop=True)
    b = back.records[cols].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert back.records["prompt_hash"].eq("p").all()
    assert written.templates == {"squad/prospective": {"task_version": "1.0", "prompt_hashes": 1}}
    text = (tmp_path / "b.json").read_text()
    head, last = text[: text.rindex(",\n    [")], "\n  ]\n}\n"  # the last record lost
    (tmp_path / "cut.json").write_text(head + last)
    with pytest.raises(RecordError, match=r"cut.json: the content does not match"):
        read_baseline(tmp_path / "cut.json")
    (tmp_path / "new.json").write_text(text.replace('"format_version": 2', '"format_version": 9'))
    with pytest.raises(RecordError, match="format_version 9"):
        read_baseline(tmp_path / "new.json")
    with pytest.raises(RecordError, match="one model"):
        write_baseline(pd.concat([recs, recs.assign(model="m09")]), tmp_path / "two.json")


def test_version_warnings_name_what_differs() -> None:
    got = version_warnings(
        {"lm_eval": "0.4.13", "metacog-eval": "0.1.0"},
        {"lm_eval": "0.4.14", "metacog-eval": "0.1.0"},
        baseline_templates={"squad/prospective": {"task_version": "1.0"}},
        candidate_templates={"squad/prospective": {"task_version": "2.0"}},
    )
    assert got[0].startswith("lm_eval version differs: baseline 0.4.13, candidate 0.4.14")
    assert "squad/prospective: task (template/grader) version differs: baseline 1.0" in got[1]
    assert len(got) == 2
    unstated = version_warnings({"inspect_ai": "0.3"}, {})
    assert "the candidate states no software versions" in unstated[0]
    assert version_warnings({"lm_eval": "1"}, {"lm_eval": "1"}) == []


# ------------------------------------------------------------------------------ real harness logs


@pytest.fixture(scope="module")
def lm_runs(tmp_path_factory) -> Path:
    """A real lm-eval run of two simulated models on the bundled mini packs."""
    from metacog_tasks.lmeval import run_lmeval

    out = tmp_path_factory.mktemp("lm-out")
    sims = [
        {"model": "metacog-sim", "model_args": f"model={m},preset=paper,seed=0"}
        for m in ("m03", "m05")
    ]
    run_lmeval(
        sims, ["metacog_mmlu_pro", "metacog_squad_cf"], output_path=out,
        metadata={"metacog_data": "bundled"}, bootstrap_iters=0,
    )  # fmt: skip
    return out


def test_lmeval_output_folders_bless_and_gate(lm_runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "bless", str(lm_runs), "--model", "metacog-sim/m03", "-o", "b.json", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    base = read_baseline(tmp_path / "b.json")
    assert "lm_eval" in base.versions
    assert base.templates["mmlu_pro/prospective"]["task_version"] == "1.0"
    assert base.records["prompt_hash"].notna().all() and base.records["doc_hash"].notna().all()
    same = metacog(
        "gate", "--baseline", "b.json", "--candidate", str(lm_runs),
        "--candidate-model", "metacog-sim/m03", "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert same.returncode == 0 and "PASS (exit 0)" in same.stdout.splitlines()[-1]
    assert _json(tmp_path / "v.json")["inputs"]["candidate"]["kind"] == "harness logs"
    # another model on the 10-14 bundled items: too few to decide, never a failure
    other = metacog(
        "gate", "--baseline", "b.json", "--candidate", str(lm_runs),
        "--candidate-model", "metacog-sim/m05", "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert other.returncode == 0, other.stdout[-2000:]
    tests = _json(tmp_path / "v.json")["tests"]
    changed = [t for t in tests if t["verdict"] == "inconclusive"]
    assert changed and all("fewer than min_items (30)" in t["reason"] for t in changed)
    # pooled: one group per probe and kind (here one benchmark per probe: 14 and 10 items)
    pooled = metacog(
        "gate", "--baseline", "b.json", "--candidate", str(lm_runs),
        "--candidate-model", "metacog-sim/m05", "--pool", "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert pooled.returncode in (0, 1) and "pooled/" in pooled.stdout
    items = {(t["probe"], t["n_items"]) for t in _json(tmp_path / "v.json")["tests"]}
    assert items == {("prospective", 14), ("counterfactual", 10), ("solve", 24)}
    # a baseline blessed under another lm-eval version is named in a warning
    lm_version = base.versions["lm_eval"]
    write_baseline(base.records, tmp_path / "old.json", versions={"lm_eval": "0.4.2"})
    warned = metacog(
        "gate", "--baseline", "old.json", "--candidate", str(lm_runs),
        "--candidate-model", "metacog-sim/m03", cwd=tmp_path,
    )  # fmt: skip
    assert warned.returncode == 0
    assert f"lm_eval version differs: baseline 0.4.2, candidate {lm_version}" in warned.stdout


def test_a_changed_lmeval_prompt_template_is_refused(lm_runs: Path, tmp_path, metacog) -> None:
    # a second lm-eval run whose SQuAD solve prompt shows the passage (open book); the probe
    # is unchanged, so lm-eval's own prompt hash (of the first request) would not see it
    from metacog_tasks.lmeval import run_lmeval

    options = {"squad": {"open_book": True}}
    sim = {
        "model": "metacog-sim",
        "model_args": {"model": "m03", "seed": 0, "benchmark_options": json.dumps(options)},
    }
    run_lmeval(
        [sim], ["metacog_mmlu_pro", "metacog_squad_cf"], output_path=tmp_path / "open",
        metadata={"metacog_data": "bundled", "metacog_options": options}, bootstrap_iters=0,
    )  # fmt: skip
    proc = metacog(
        "gate", "--baseline", str(lm_runs), "--baseline-model", "metacog-sim/m03",
        "--candidate", str(tmp_path / "open"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert (
        "squad/counterfactual/verbal_binary: prompt_hash (prompt template) differs on"
        in proc.stdout
    )
    assert "mmlu_pro" not in "".join(x for x in proc.stdout.splitlines() if "differs" in x)


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory) -> Path:
    from inspect_ai import eval as inspect_eval

    from metacog_tasks.inspect_tasks import mmlu_pro

    out = tmp_path_factory.mktemp("inspect-logs")
    inspect_eval(
        mmlu_pro(data="bundled"), model="metacog-sim/m03", display="none", log_dir=str(out)
    )
    return out


def test_inspect_logs_gate_and_cross_harness_runs_are_refused(
    inspect_logs: Path, lm_runs: Path, tmp_path, metacog
) -> None:
    same = metacog(
        "gate", "--baseline", str(inspect_logs), "--candidate", str(inspect_logs),
        "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert same.returncode == 0 and "PASS (exit 0)" in same.stdout.splitlines()[-1]
    assert "inspect_ai" in _json(tmp_path / "v.json")["inputs"]["candidate"]["versions"]
    cross = metacog(
        "gate", "--baseline", str(lm_runs), "--baseline-model", "metacog-sim/m03",
        "--candidate", str(inspect_logs), cwd=tmp_path,
    )  # fmt: skip
    assert cross.returncode == 2
    assert "the baseline was logged by 'lm-eval', the candidate by 'inspect'" in cross.stdout


# ------------------------------------------------------------------------------ settings, plan


def _gate_parsers():
    root = build_parser()
    gate = root._subparsers._group_actions[0].choices["gate"]
    sub = next(a for a in gate._actions if a.dest == "gate_command").choices
    return gate, sub["bless"], sub["plan"]


def test_the_settings_flags_are_the_config_fields() -> None:
    flagged = {k: (d, h) for k, (d, h, flag) in gate_settings_help().items() if flag}
    assert set(flagged) >= {"rule", "alpha", "pool", "max_missing_items", "ungraded"}
    for parser in _gate_parsers():
        actions = {a.dest: a for a in parser._actions}
        for key, (_default, text) in flagged.items():
            action = actions[key]
            assert action.option_strings == ["--" + key.replace("_", "-")]
            assert action.help.startswith(text) and "(default: " in action.help
    # the docs' settings table names every key with the dataclass default
    doc = (Path(__file__).resolve().parents[1] / "docs" / "gate.md").read_text()
    for key, (default, _, _) in gate_settings_help().items():
        shown = "none" if default is None else str(default).lower()
        if key in ("margins", "metrics", "check", "benchmarks"):
            assert f"| `{key}` |" in doc, key
        else:
            assert f"| `{key}` | `{shown}` |" in doc, key


def test_flags_override_the_config_file(runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "rerun.pq"),
        "--config", str(runs / "gate.yaml"), "--rule", "threshold", "--alpha", "0.05",
        "--pool", "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    config = _json(tmp_path / "v.json")["config"]
    assert (config["rule"], config["alpha"], config["pool"], config["n_boot"]) == (
        "threshold", 0.05, True, 300,
    )  # fmt: skip
    assert proc.returncode in (0, 1)
    bad = metacog("gate", "--baseline", "a", "--candidate", "b", "--rule", "lax", cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice: 'lax'" in bad.stderr


def test_the_first_run_says_to_bless(runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "--baseline", "ci/metacog-baseline.json", "--candidate",
        str(runs / "base.parquet"), "--junit", "j.xml", "--comment", "c.md", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "A first run? Bless a run of the checkpoint you trust" in proc.stdout
    assert "metacog gate bless RUN -o ci/metacog-baseline.json" in proc.stdout
    assert "A first run?" in (tmp_path / "c.md").read_text()
    assert etree.XMLSchema(etree.parse(str(SCHEMA))).validate(etree.parse(str(tmp_path / "j.xml")))


def test_the_comment_is_sized_for_a_pull_request(runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate", str(runs / "noisy.csv"),
        "--config", str(runs / "gate.yaml"), "--comment", "c.md", "--markdown", "m.md",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1
    comment = (tmp_path / "c.md").read_text()
    assert len(comment.encode()) <= COMMENT_LIMIT and "### Regressions" in comment
    assert comment == (tmp_path / "m.md").read_text()  # small enough: the same text


def test_several_candidate_runs_are_pooled_as_repeats(runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "--baseline", str(runs / "base.parquet"), "--candidate",
        str(runs / "rerun.pq"), str(runs / "base.parquet"), "--config", str(runs / "gate.yaml"),
        "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    data = _json(tmp_path / "v.json")
    assert data["inputs"]["candidate"]["repeats"] == 2
    assert {t["repeats"] for t in data["tests"] if t["metric"] != "accuracy"} == {2}
    assert "candidate: 2 runs of m03 pooled per item (repeats)" in data["warnings"]


def test_plan_from_an_item_count_and_from_a_baseline(runs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "plan", "--items", "1000", "--target", "auroc=0.06", "--json", "p.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    plan = _json(tmp_path / "p.json")
    ref = plan_from_items(1000, targets={"auroc": 0.06})
    auroc = next(t for t in plan["tests"] if t["metric"] == "auroc")
    assert auroc["detectable"] == pytest.approx(next(t.detectable for t in ref.tests
                                                     if t.metric == "auroc"))  # fmt: skip
    assert auroc["items_needed"] > 1000 and "items needed" in proc.stdout
    bless = metacog("gate", "bless", str(runs / "base.parquet"), "-o", "b.json", cwd=tmp_path)
    assert bless.returncode == 0
    from_file = metacog(
        "gate", "plan", "--baseline", "b.json", "--alpha", "0.05", "--json", "q.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert from_file.returncode == 0, from_file.stderr
    q = _json(tmp_path / "q.json")
    assert q["alpha"] == 0.05 and q["n_tests"] == len(q["tests"]) > 4
    paired = metacog(
        "gate", "plan", "--baseline", "b.json", "--candidate", str(runs / "rerun.pq"),
        "--json", "r.json", cwd=tmp_path,
    )  # fmt: skip
    assert paired.returncode == 0 and _json(tmp_path / "r.json")["correlation"] is None
    nothing = metacog("gate", "plan", cwd=tmp_path)
    assert nothing.returncode == 2 and "give --baseline RUN" in nothing.stderr


def test_plan_says_why_a_target_within_the_margin_needs_never() -> None:
    within = plan_from_items(1000, targets={"auroc": 0.03})
    (auroc,) = [t for t in within.tests if t.metric == "auroc"]
    assert auroc.items_needed is None and "never: a target at or within the margin" in within.text()
    beyond = plan_from_items(1000, targets={"auroc": 0.031})
    assert next(t for t in beyond.tests if t.metric == "auroc").items_needed > 1000
    assert "never:" not in beyond.text()


@pytest.fixture(scope="module")
def inspect_epochs(tmp_path_factory) -> Path:
    from inspect_ai import eval as inspect_eval

    from metacog_tasks.inspect_tasks import mmlu_pro

    out = tmp_path_factory.mktemp("inspect-epochs")
    inspect_eval(
        mmlu_pro(data="bundled"), model="metacog-sim/m03", display="none", log_dir=str(out),
        epochs=2,
    )  # fmt: skip
    return out


def test_inspect_epochs_are_pooled_per_item(inspect_epochs: Path, tmp_path, metacog) -> None:
    proc = metacog(
        "gate", "--baseline", str(inspect_epochs), "--candidate", str(inspect_epochs),
        "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    data = _json(tmp_path / "v.json")
    assert data["inputs"]["candidate"]["repeats"] == 2
    assert any("epochs 1-2 of the Inspect logs pooled per item" in w for w in data["warnings"])
    assert not any("other epochs not read" in w for w in data["warnings"])


@pytest.mark.slow
def test_the_demo_shows_a_pass_and_a_fail(tmp_path) -> None:
    # ~1-3 min: three lm-eval runs of simulated checkpoints on the bundled packs
    proc = _metacog("gate", "demo", "--out", "demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last == "the unchanged checkpoint: PASS (exit 0); the degraded one: FAIL (exit 1)"
    assert "regression: auroc" in proc.stdout and "fatal:" not in proc.stdout
    jenkins = etree.XMLSchema(etree.parse(str(SCHEMA)))
    assert jenkins.validate(etree.parse(str(tmp_path / "demo" / "degraded-junit.xml")))
    listed = json.loads((tmp_path / "demo" / ".metacog-manifest.json").read_text())["outputs"]
    files = {p.relative_to(tmp_path / "demo").as_posix() for p in (tmp_path / "demo").rglob("*")}
    own = set(listed["gate-demo"])  # every file the demo wrote is its own to replace next time
    assert {"metacog-baseline.json", "degraded-junit.xml"} <= own
    assert {f for f in files if f.startswith("runs/") and (tmp_path / "demo" / f).is_file()} <= own


def test_the_demo_never_writes_into_a_folder_it_did_not_make(tmp_path) -> None:
    mine = tmp_path / "mine"
    (mine / "runs" / "rerun").mkdir(parents=True)
    (mine / "runs" / "rerun" / "notes.txt").write_text("keep")
    proc = _metacog("gate", "demo", "--out", str(mine), cwd=tmp_path)
    assert proc.returncode == 2 and "metacog did not write it" in proc.stderr
    assert (mine / "runs" / "rerun" / "notes.txt").read_text() == "keep"
    assert sorted(p.name for p in mine.rglob("*")) == ["notes.txt", "rerun", "runs"]
