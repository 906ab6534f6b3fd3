"""The figures of the evaluation reports in ``docs/benchmarks/<name>.md``.

Prints, as Markdown, for each benchmark:

* the simulated population (records of ``metacog demo --benchmarks <all six>``; default preset,
  12 models, seed 0): per model accuracy, yes-rate and the AUROC of the verbal Yes/No against
  correctness (ties counted half, as ``sklearn.metrics.roc_auc_score``);
* where the repository's data hold real model outputs for it, the project's grader on them:
  SQuAD's leaderboard predictions (EM/F1 beside the official script's scores), MMLU-Pro's
  chain-of-thought generations (accuracy, and agreement with the letter the authors' pipeline
  extracted), Omni-MATH's reference solutions (share verified by math-verify);
* for MMLU (the original, which the real confidence runs in the data use), per model accuracy
  and the AUROC of verbalised confidence.

With ``--write docs/benchmarks`` it writes each benchmark's README there: its record (paper,
homepage, data, citation), how to run it, and the report.

Usage (the data folder is the repository's ``shared/data``; nothing from it is copied)::

    metacog demo --out sim --benchmarks squad,mmlu_pro,legalbench,mathbench,omni_math,scicode
    python tools/benchmark_report.py --records sim/lm-eval/records.parquet --data ../shared/data \
        --write docs/benchmarks
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from metacog_tasks.benchmarks import BENCHMARK_NAMES, benchmark_class, get_benchmark


def _auroc(conf: pd.Series, correct: pd.Series) -> float:
    ok = conf.notna() & correct.notna()
    y = correct[ok].to_numpy()
    return float(roc_auc_score(y, conf[ok])) if 0 < y.sum() < len(y) else float("nan")


def _fmt(x: float, spec: str = ".3f") -> str:
    return "n/a" if x is None or not np.isfinite(x) else format(x, spec)


def simulated(records: pd.DataFrame, benchmark: str) -> str:
    """The table of the simulated population on one benchmark's bundled pack."""
    rows = records[(records["benchmark"] == benchmark) & (records["probe"] == "prospective")]
    if rows.empty:
        return "(no records)"
    lines = ["| model | items | accuracy | yes-rate | AUROC |", "|---|---|---|---|---|"]
    aucs = []
    for model, g in rows.groupby("model", sort=True):
        auc = _auroc(g["confidence"], g["correct"])
        aucs.append(auc)
        lines.append(
            f"| {model} | {len(g)} | {_fmt(g['correct'].mean())} | "
            f"{_fmt(g['confidence'].mean())} | {_fmt(auc)} |"
        )
    finite = [a for a in aucs if np.isfinite(a)]
    lines.append(
        f"| all {rows['model'].nunique()} | {rows['item_id'].nunique()} items | "
        f"{_fmt(rows['correct'].mean())} | {_fmt(rows['confidence'].mean())} | median "
        f"{_fmt(float(np.median(finite)) if finite else float('nan'))} |"
    )
    return "\n".join(lines)


def squad_real(data: Path) -> str:
    lines = [
        "| version | run | items | EM | F1 | official EM | official F1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for version in ("1.1", "2.0"):
        folder = data / "benchmarks" / "squad" / f"v{version}"
        bench = get_benchmark("squad", version=version)
        items = bench.load(folder / "validation_sample.jsonl")
        expected = json.loads((folder / "expected_scores.json").read_text())["scores"]
        for pred_file in sorted(folder.glob("predictions.*.json")):
            run = pred_file.name.split(".")[1]
            preds = json.loads(pred_file.read_text())
            got = bench.aggregate(
                items, [bench.grade_prediction(it, preds[it.item_id]) for it in items]
            )
            want = expected[run]
            em = "exact" if "exact" in want else "exact_match"  # v2.0's script / v1.1's names
            lines.append(
                f"| {version} | {run} | {len(items)} | {got[em]:.3f} | {got['f1']:.3f} | "
                f"{want[em]:.3f} | {want['f1']:.3f} |"
            )
    return "\n".join(lines)


def mmlu_pro_real(data: Path) -> str:
    from metacog_tasks.benchmarks.mmlu_pro import extract_choice

    folder = data / "benchmarks" / "mmlu_pro"
    bench = get_benchmark("mmlu_pro")
    items = {it.item_id: it for it in bench.load(folder / "test_sample.jsonl")}
    rows = [json.loads(line) for line in (folder / "model_outputs_sample.jsonl").open()]
    out = [
        "| model | generations | accuracy (this grader) | accuracy (authors' pred) | "
        "same letter as the authors' pipeline |",
        "|---|---|---|---|---|",
    ]
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model]
        ours = [bench.grade(items[str(r["question_id"])], r["model_output"]).correct for r in mine]
        theirs = [float(r["pred"] is not None and r["pred"] == r["answer"]) for r in mine]
        same = [extract_choice(r["model_output"])[0] == r["pred"] for r in mine]
        out.append(
            f"| {model} | {len(mine)} | {np.mean(ours):.3f} | {np.mean(theirs):.3f} | "
            f"{sum(same)} of {len(mine)} |"
        )
    return "\n".join(out)


def omni_math_real(data: Path) -> str:
    # A long per-step timeout: the first math-verify call of a process loads its parsers
    # (4 s on a loaded 2-core machine, near the 5 s default), and a figure in the README must
    # not depend on the machine's load.
    bench = get_benchmark("omni_math", verify_timeout_s=60)
    items = bench.load(data / "benchmarks" / "omni_math" / "omni_math_rule_sample.jsonl")
    grades = [bench.grade(it, it.record["solution"]) for it in items]
    boxed = [g for it, g in zip(items, grades) if "\\boxed" in it.record["solution"]]
    right = sum(g.correct == 1.0 for g in boxed)
    flagged = sum(g.status == "unextractable" for g in grades)
    return (
        f"The authors' reference solutions of {len(items)} Omni-MATH-Rule problems, graded as "
        f"model replies (the last `\\boxed{{}}` against the answer, math-verify): of the "
        f"{len(boxed)} that box their final answer, {right} verified; the other "
        f"{len(items) - len(boxed)} state it in prose, and the grader marks them unextractable "
        f"({flagged} flagged, graded wrong), as it would a model reply without a box."
    )


def mmlu_real(data: Path) -> str:
    tidy = pd.read_csv(data / "realruns" / "cacioli_mmlu500_verbalized" / "tidy.csv")
    lines = ["| model | items | accuracy | mean confidence | AUROC |", "|---|---|---|---|---|"]
    for model, g in tidy.groupby("model", sort=True):
        lines.append(
            f"| {model} | {len(g)} | {g['correct'].mean():.3f} | "
            f"{g['confidence'].mean():.3f} | {_auroc(g['confidence'], g['correct']):.3f} |"
        )
    return "\n".join(lines)


_DEMO = "metacog demo --benchmarks squad,mmlu_pro,legalbench,mathbench,omni_math,scicode"
_REAL_SOURCES = {
    "squad": "the SQuAD leaderboard's predictions of four systems on one dev article per version "
    "(`shared/data/benchmarks/squad/`: SQuAD-explorer's `predictions.*.json` and the scores of "
    "the official `evaluate-v2.0.py` on them), graded with this project's grader",
    "mmlu_pro": "chain-of-thought generations of Llama-2-7B and Gemini-1.5-Flash-002 from the "
    "MMLU-Pro authors' released outputs (`shared/data/benchmarks/mmlu_pro/"
    "model_outputs_sample.jsonl`, 90 rows), graded with this project's extraction chain",
    "omni_math": "the reference solutions of the Omni-MATH-Rule subset "
    "(`shared/data/benchmarks/omni_math/omni_math_rule_sample.jsonl`)",
}


def readme(record, records: pd.DataFrame, data: Path, real) -> str:
    """The README of one benchmark."""
    name = record.name
    split = getattr(record, "default_split", "test")
    parts = [
        f"# {record.title}\n",
        f"{record.title}: {record.summary}. lm-eval tasks `metacog_{name}` (prospective probe) "
        f"and `metacog_{name}_cf` (counterfactual); Inspect task `metacog_tasks/{name}`.\n",
        f"* Paper: {record.paper}",
        f"* Homepage: {record.homepage}",
        f"* Data: `{record.dataset}`, split `{split}`; licence: {record.data_license}. The "
        "bundled mini pack (offline) holds items written for this project in the same format.\n",
        "## Running it\n",
        "```bash",
        "metacog lm-eval run --model hf --model_args pretrained=ORG/MODEL \\",
        f"    --tasks metacog_{name},metacog_{name}_cf --output_path runs/",
        f"inspect eval metacog_tasks/{name} --model openai/gpt-4o-mini",
        "# offline, on the bundled pack, with a simulated model:",
        f"metacog lm-eval run --model metacog-sim --model_args model=m01 --tasks metacog_{name} \\",
        '    --metadata \'{"metacog_data": "bundled"}\' --output_path runs/',
        f"inspect eval metacog_tasks/{name} --model metacog-sim/m01 -T data=bundled",
        "```\n",
        "## Evaluation report\n",
        "### Simulated population, bundled pack\n",
        f"Twelve simulated models (preset `paper`, seed 0) through lm-eval, from `{_DEMO}` "
        "(records in `metacog-demo/lm-eval/records.parquet`); accuracy of the graded answer, "
        "yes-rate of the prospective probe and the AUROC of that Yes/No against correctness "
        "(ties half; n/a where a model got every item right or every item wrong). The "
        "simulator is deterministic, so the same command gives these numbers: a check that an "
        "install grades and parses as this one does. The numbers describe the simulated "
        "population, not any real model.\n",
        simulated(records, name) + "\n",
    ]
    if name in real:
        parts += [
            "### Real model outputs\n",
            f"Source: {_REAL_SOURCES[name]}.\n",
            real[name](data) + "\n",
        ]
    else:
        parts += [
            "### Real model outputs\n",
            f"The repository's data hold no model outputs for {record.title}; the grader "
            "is checked against the authors' rules in the tests.\n",
        ]
    if name == "mmlu_pro":
        parts += [
            "### Related: verbalised confidence of real models on MMLU\n",
            "The real per-item confidence runs in the repository's data are on MMLU (the "
            "original benchmark, not MMLU-Pro): 16 frontier models x 500 items, confidence "
            "0-100 stated before answering (Cacioli 2026, `shared/data/realruns/"
            "cacioli_mmlu500_verbalized/`; the AUROC reproduces the published per-model "
            "values). `metacog analyze` reads them as they are.\n",
            mmlu_real(data) + "\n",
        ]
    parts += ["## Citation\n", "```bibtex", record.citation.strip(), "```\n"]
    return "\n".join(parts)


#: The benchmarks whose real model outputs the data hold, and the table of each.
REAL_OUTPUTS = {"squad": squad_real, "mmlu_pro": mmlu_pro_real, "omni_math": omni_math_real}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", required=True, help="records.parquet of the demo run")
    parser.add_argument("--data", required=True, help="the data folder (shared/data)")
    parser.add_argument("--write", help="write each benchmark's README into this folder")
    args = parser.parse_args()
    records = pd.read_parquet(args.records)
    data = Path(args.data)
    for name in BENCHMARK_NAMES:
        text = readme(benchmark_class(name), records, data, REAL_OUTPUTS)
        if args.write:
            out = Path(args.write) / f"{name}.md"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            print(f"wrote {out}")
        else:
            print(text)


if __name__ == "__main__":
    main()
