"""Plant each pinned rule's bug and check that its test fails (docs/mutation.md lists them).

Every rule below is one line of the code and the test that pins it. For each rule the script
copies the repository into a temporary folder, makes the one-line change that breaks the rule
(the "planted bug"), runs the rule's tests there and reports whether they failed, as they
must. The working tree is never edited. The tests run without ``../shared`` (the copy has no
sibling ``shared`` folder), with ``CI`` unset (so the tests that need it skip instead of
failing) and with numba hidden, so a rule counts as pinned only when a test that needs neither
the shared data nor the compiled engine catches its bug.

Usage::

    python tools/pinned_rules.py            # every rule
    python tools/pinned_rules.py --baseline # also check that the tests pass unplanted
    python tools/pinned_rules.py ece-round yes-rate
    python tools/pinned_rules.py --list

Not part of CI (a minute or two); run it after changing a pinned rule or its test.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def copy_repo(dest: Path) -> None:
    """The tracked files (and untracked, not ignored ones) of the working tree."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.split(b"\0")  # fmt: skip
    for raw in files:
        if not raw:
            continue
        rel = Path(raw.decode())
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


#: Runs pytest with numba hidden (``import numba`` fails, ``find_spec`` returns None).
_PYTEST_WITHOUT_NUMBA = (
    "import sys; sys.modules['numba'] = None; import pytest; sys.exit(pytest.main(sys.argv[1:]))"
)


@dataclasses.dataclass(frozen=True)
class Rule:
    """One pinned rule: the line that carries it, the change that breaks it, its tests."""

    name: str
    rule: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


_CAL = "metacog_metrics/calibration.py"
_TET = "metacog_metrics/tetrachoric.py"
_REC = "metacog_metrics/records.py"
_PAR = "metacog_tasks/parsing.py"
_MMLU = "metacog_tasks/benchmarks/mmlu_pro.py"
_T_CAL = "tests/test_calibration.py::"
_T_TET = "tests/test_tetrachoric.py::"
_T_REC = "tests/test_records.py::"
_T_PAR = "tests/test_parsing.py::"
_T_MMLU = "tests/test_bench_mmlu_pro.py::"

RULES: tuple[Rule, ...] = (
    Rule(
        "tetrachoric-binarise",
        "confidence >= threshold is 'yes' in the confidence-correctness tetrachoric",
        _CAL,
        "tetrachoric((c >= threshold).astype(float), y)",
        "tetrachoric((c > threshold).astype(float), y)",
        (_T_CAL + "test_confidence_tetrachoric_counts_the_threshold_itself_as_yes",),
    ),
    Rule(
        "matrix-binarise",
        "confidence >= threshold is 'yes' in the items x models matrix (tetrachoric, factors)",
        _REC,
        "return np.where(np.isnan(c), np.nan, c >= threshold)",
        "return np.where(np.isnan(c), np.nan, c > threshold)",
        (_T_REC + "test_binary_confidence_counts_the_threshold_as_yes",),
    ),
    Rule(
        "yes-rate",
        "the yes-rate counts confidence 0.5 as yes",
        _CAL,
        "yes_rate=float((c >= 0.5).mean())",
        "yes_rate=float((c > 0.5).mean())",
        (_T_CAL + "test_yes_rate_counts_one_half_as_yes",),
    ),
    Rule(
        "gate-yes-rate",
        "the gate's yes-rate counts confidence 0.5 as yes",
        "metacog_metrics/gate.py",
        "(c0 >= 0.5).astype(float)",
        "(c0 > 0.5).astype(float)",
        ("tests/test_gate.py::test_unit_weights_match_sklearn_and_the_calibration_module",),
    ),
    Rule(
        "ece-round",
        "ECE bins round c * B (9 decimals) before the floor",
        _CAL,
        "np.floor(np.round(c * n_bins, 9))",
        "np.floor(c * n_bins)",
        (_T_CAL + "test_ece_rounds_before_the_floor_with_several_items",),
    ),
    Rule(
        "ece-last-bin",
        "the last ECE bin is closed at 1",
        _CAL,
        ".astype(np.int64), 0, n_bins - 1)",
        ".astype(np.int64), 0, n_bins)",
        (_T_CAL + "test_ece_last_bin_is_closed_at_one",),
    ),
    Rule(
        "auroc-ties",
        "an AUROC tie counts 1/2 (per-model AUROC, no ../shared needed)",
        _CAL,
        "return float((pos * (neg_below + 0.5 * neg)).sum() / (pos.sum() * neg.sum()))",
        "return float((pos * (neg_below + neg)).sum() / (pos.sum() * neg.sum()))",
        (_T_CAL + "test_auroc_ties_count_one_half_without_shared",),
    ),
    Rule(
        "bootstrap-auroc-ties",
        "an AUROC tie counts 1/2 in the Internal - Pop bootstrap draws",
        _CAL,
        "num = (pos * (neg_below + 0.5 * neg)).sum(axis=1)",
        "num = (pos * (neg_below + neg)).sum(axis=1)",
        (_T_CAL + "test_cell_count_bootstrap_has_the_item_bootstrap_law_by_enumeration",),
    ),
    Rule(
        "pop-p-plus-one",
        "Internal - Pop bootstrap p-value is (1 + count) / (B + 1)",
        _CAL,
        "low = (1 + int((diffs <= 0).sum())) / (b + 1)",
        "low = int((diffs <= 0).sum()) / b",
        (_T_CAL + "test_internal_minus_pop_bootstrap_p_value_by_hand",),
    ),
    Rule(
        "pop-p-ties",
        "a bootstrap difference of exactly 0 counts in both tails of the Internal - Pop p-value",
        _CAL,
        "high = (1 + int((diffs >= 0).sum())) / (b + 1)",
        "high = (1 + int((diffs > 0).sum())) / (b + 1)",
        (_T_CAL + "test_internal_equal_to_pop_has_p_value_one",),
    ),
    Rule(
        "tetrachoric-min-rows-pair",
        "a tetrachoric pair needs 3 complete rows (3 is enough)",
        _TET,
        "    if n < 3:\n",
        "    if n < 4:\n",
        (_T_TET + "test_pair_with_exactly_three_complete_rows_is_estimated",),
    ),
    Rule(
        "tetrachoric-min-rows-pair-2",
        "a tetrachoric pair needs 3 complete rows (2 are not enough)",
        _TET,
        "    if n < 3:\n",
        "    if n < 2:\n",
        (_T_TET + "test_pair_with_exactly_three_complete_rows_is_estimated",),
    ),
    Rule(
        "tetrachoric-min-rows-matrix",
        "a pair of the tetrachoric matrix needs 3 complete rows",
        _TET,
        "enough = n_pair[iu, ju] > 2",
        "enough = n_pair[iu, ju] > 1",
        (_T_TET + "test_matrix_pair_needs_three_complete_rows",),
    ),
    Rule(
        "zero-cell-proportions",
        "proportion tables (sum 1) are never zero-cell corrected",
        _TET,
        "fix = (counts.sum(axis=1) > 1.0)",
        "fix = (counts.sum(axis=1) >= 1.0)",
        (_T_TET + "test_proportion_tables_are_never_zero_cell_corrected",),
    ),
    Rule(
        "zero-cell-counts",
        "count tables with a zero cell get the 0.5 correction",
        _TET,
        "fix = (counts.sum(axis=1) > 1.0)",
        "fix = (counts.sum(axis=1) > 1e9)",
        (_T_TET + "test_count_tables_are_zero_cell_corrected",),
    ),
    Rule(
        "empty-item-id",
        "an empty item_id is rejected, naming the row",
        _REC,
        'if "" in names:',
        "if False:",
        (_T_REC + "test_empty_item_id_is_rejected",),
    ),
    Rule(
        "n-samples-zero",
        "n_samples must be >= 1",
        _REC,
        '("n_samples", 1)',
        '("n_samples", 0)',
        (_T_REC + "test_n_samples_zero_is_rejected_one_accepted",),
    ),
    Rule(
        "refusal-with-no",
        "a refusal containing 'no' is a refusal, not the verdict no",
        _PAR,
        "if len(words) != 1 or _REFUSAL.search(span):",
        "if len(words) != 1:",
        (_T_PAR + "test_refusal_containing_no_is_not_a_no",),
    ),
    Rule(
        "long-reply-yes",
        "a reply of more than 12 words is not read whole (a stray 'Yes' is no verdict)",
        _PAR,
        "len(cleaned.split()) <= 12",
        "len(cleaned.split()) <= 40",
        (_T_PAR + "test_long_reply_containing_yes_is_not_a_yes",),
    ),
    Rule(
        "confidence-above-100",
        "a confidence above 100 (e.g. 150) is no verdict, not 1.5 or 1.0",
        _PAR,
        "if not math.isfinite(value) or value < 0.0 or value > 1.0:",
        "if not math.isfinite(value) or value < 0.0:",
        (_T_PAR + "test_confidence_beyond_the_bounds_is_no_verdict",),
    ),
    Rule(
        "confidence-clipped",
        "a confidence above 100 is not clipped to 1",
        _PAR,
        "if not math.isfinite(value) or value < 0.0 or value > 1.0:\n        return None",
        "if not math.isfinite(value) or value < 0.0:\n        return None\n"
        "    value = min(value, 1.0)",
        (_T_PAR + "test_confidence_beyond_the_bounds_is_no_verdict",),
    ),
    Rule(
        "last-labelled-verdict",
        "the last labelled verdict of a reply wins",
        _PAR,
        "return _yes_no(labelled[-1].group(1), labelled[-1].group(0))",
        "return _yes_no(labelled[0].group(1), labelled[0].group(0))",
        (_T_PAR + "test_last_labelled_verdict_wins_in_any_context",),
    ),
    Rule(
        "mmlu-last-letter",
        "MMLU-Pro: without a labelled answer, the last standalone letter is read",
        _MMLU,
        '_LAST_LETTER = re.compile(r"\\b[A-J]\\b(?!.*\\b[A-J]\\b)", re.DOTALL)',
        '_LAST_LETTER = re.compile(r"\\b[A-J]\\b", re.DOTALL)',
        (_T_MMLU + "test_last_standalone_letter_otherwise",),
    ),
    Rule(
        "mmlu-last-answer-colon",
        "MMLU-Pro: the last 'answer:' of its line is read (greedy '.*')",
        _MMLU,
        '_ANSWER_COLON = re.compile(r".*[aA]nswer:',
        '_ANSWER_COLON = re.compile(r".*?[aA]nswer:',
        (_T_MMLU + "test_answer_colon_takes_the_last_on_its_line",),
    ),
    Rule(
        "mmlu-answer-is-case",
        "MMLU-Pro: 'answer is' is case sensitive",
        _MMLU,
        '_ANSWER_IS = re.compile(r"answer is \\(?([A-J])\\)?")',
        '_ANSWER_IS = re.compile(r"(?i:answer is) \\(?([A-J])\\)?")',
        (_T_MMLU + "test_answer_is_is_case_sensitive",),
    ),
    Rule(
        "mmlu-answer-colon-case",
        "MMLU-Pro: 'answer:' accepts only a or A as its first letter",
        _MMLU,
        '_ANSWER_COLON = re.compile(r".*[aA]nswer:',
        '_ANSWER_COLON = re.compile(r".*(?i:answer):',
        (_T_MMLU + "test_answer_colon_accepts_only_a_or_capital_a",),
    ),
    Rule(
        "mmlu-lowercase-letter",
        "MMLU-Pro: a lowercase letter is never a choice",
        _MMLU,
        '_ANSWER_IS = re.compile(r"answer is \\(?([A-J])\\)?")',
        '_ANSWER_IS = re.compile(r"answer is \\(?([A-Ja-j])\\)?")',
        (_T_MMLU + "test_lowercase_letters_are_never_choices",),
    ),
    Rule(
        "mmlu-letters-stop-at-j",
        "MMLU-Pro: letters stop at J",
        _MMLU,
        '_ANSWER_COLON = re.compile(r".*[aA]nswer:\\s*([A-J])")',
        '_ANSWER_COLON = re.compile(r".*[aA]nswer:\\s*([A-K])")',
        (_T_MMLU + "test_letters_stop_at_j",),
    ),
    Rule(
        "mmlu-beyond-options",
        "MMLU-Pro: a letter beyond the item's options is extracted and graded wrong",
        _MMLU,
        "        if letter is None:\n            return Grade(",
        "        if letter is None or letter not in LETTERS[: item.meta['n_options']]:\n"
        "            return Grade(",
        (_T_MMLU + "test_letter_beyond_the_items_options_is_graded_wrong",),
    ),
    Rule(
        "alignment-critical-tail",
        "power: the alignment critical value is the upper (1 - alpha) normal quantile",
        "metacog_metrics/power.py",
        "finite.mean() + stats.norm.ppf(1 - alpha) * finite.std(ddof=1)",
        "finite.mean() + stats.norm.ppf(alpha) * finite.std(ddof=1)",
        ("tests/test_power.py::test_alignment_critical_value_is_the_upper_normal_quantile",),
    ),
    Rule(
        "alignment-rejection-tail",
        "power: an alignment replicate is detected above the critical value",
        "metacog_metrics/power.py",
        "np.sum(contentious[finite] > critical)",
        "np.sum(contentious[finite] < critical)",
        ("tests/test_power.py::test_alignment_critical_value_is_the_upper_normal_quantile",),
    ),
    Rule(
        "numpy-engine-ties",
        "pairwise NumPy engine: a null draw equal to the observed S counts (>=), no numba",
        "metacog_metrics/pairwise/pair.py",
        "ge = np.where(ok, (s_null >= s_obs[:, None]).sum(axis=1), 0)",
        "ge = np.where(ok, (s_null > s_obs[:, None]).sum(axis=1), 0)",
        ("tests/test_pairwise.py::test_numpy_engine_counts_ties_with_the_observed_value",),
    ),
)


def _pytest(work: Path, tests: tuple[str, ...]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("CI", None)
    env["METACOG_SHARED"] = str(work.parent / "no-shared-folder")  # never the real one
    proc = subprocess.run(
        [sys.executable, "-c", _PYTEST_WITHOUT_NUMBA, "-x", "-q", "-p", "no:cacheprovider",
         "-rs", *tests],
        cwd=work, env=env, text=True, capture_output=True,
    )  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr


def check(rule: Rule, baseline: bool) -> dict:
    """Plant ``rule``'s bug in a fresh copy and run its tests (and, if asked, unplanted)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="metacog-pinned-") as tmp:
        work = Path(tmp) / "repo"
        copy_repo(work)
        out: dict = {"name": rule.name, "tests": list(rule.tests)}
        if baseline:
            code, log = _pytest(work, rule.tests)
            out["baseline_passed"] = code == 0 and " skipped" not in log
            if not out["baseline_passed"]:
                out["baseline_log"] = log[-2000:]
        target = work / rule.path
        text = target.read_text(encoding="utf-8")
        if text.count(rule.old) != 1:
            out.update(caught=False, error=f"{rule.path}: the line to plant is not there once")
            return out
        target.write_text(text.replace(rule.old, rule.new), encoding="utf-8")
        code, log = _pytest(work, rule.tests)
        # exit code 1: a test failed (2-5: interrupted, usage error, nothing collected)
        out["caught"] = code == 1
        if code != 1:
            out["log"] = log[-2000:]
    out["seconds"] = round(time.monotonic() - started, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rules", nargs="*", help="rule names (default: all)")
    parser.add_argument("--baseline", action="store_true", help="also run the tests unplanted")
    parser.add_argument("--list", action="store_true", help="list the rules and their tests")
    parser.add_argument(
        "--markdown", action="store_true", help="print the rules as a Markdown table (docs)"
    )
    args = parser.parse_args(argv)
    by_name = {r.name: r for r in RULES}
    unknown = [n for n in args.rules if n not in by_name]
    if unknown:
        parser.error(f"unknown rules {unknown}; known: {', '.join(by_name)}")
    chosen = [by_name[n] for n in args.rules] if args.rules else list(RULES)
    if args.markdown:
        print("| rule | planted bug | test |\n|---|---|---|")
        for r in chosen:
            bug = f"`{r.path}`: `{r.old.strip()}` -> `{r.new.strip()}`".replace("\n", " ")
            bug = " ".join(bug.split()).replace("|", "\\|")
            tests = "<br>".join(f"`{t}`" for t in r.tests)
            print(f"| {r.rule} | {bug} | {tests} |")
        return 0
    if args.list:
        for r in chosen:
            print(f"{r.name}: {r.rule}\n    {r.path}: {r.old.strip()!r} -> {r.new.strip()!r}")
            for t in r.tests:
                print(f"    {t}")
        return 0
    missed = []
    for r in chosen:
        res = check(r, args.baseline)
        ok = res["caught"] and res.get("baseline_passed", True)
        if not ok:
            missed.append(r.name)
        state = "caught" if res["caught"] else "NOT CAUGHT"
        if not res.get("baseline_passed", True):
            state += " (but the tests fail or skip unplanted)"
        print(f"{r.name:32s} {state:10s} {res.get('seconds', 0):6.1f} s  {r.tests[0]}", flush=True)
        for key in ("error", "baseline_log", "log"):
            if key in res:
                print(f"    {key}: {res[key]}")
    print(f"\n{len(chosen) - len(missed)}/{len(chosen)} planted bugs caught", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
