"""verl and OpenRLHF: the dataset in their formats, and the reward entry points they call.

Exports (``metacog rlmf export``) of a dataset ``build``/``select`` wrote:

* verl (parquet, ``docs/preparation/prepare_data``): ``data_source`` (``metacog/<benchmark>``),
  ``prompt`` (chat messages), ``ability`` (``math``, ``code``, ``qa``, ``knowledge``,
  ``legal``), ``reward_model`` ``{"style": "rule", "ground_truth": <label>}`` and ``extra_info``
  (``split``, ``index``, ``benchmark``, ``item_id``, ``source`` and the calibration fields:
  ``accuracy``, ``stated_confidence``, ``intrinsic_confidence``, ``n_samples``,
  ``n_answer_classes``);
* OpenRLHF (JSONL, ``--input_key input --label_key label --apply_chat_template``): ``input``
  (chat messages), ``label``, ``datasource``.

The label is a JSON string naming the item (``benchmark``, ``item_id``, ``source``) with the
calibration fields: the reward re-grades a completion with the benchmark's own grader, so
OpenRLHF, which passes only the label, has all it needs.

Entry points (one scoring path, the TRL reward functions of :mod:`rlmf_plugin.rewards`):

* verl: :func:`compute_score` (``custom_reward_function.path`` = this file,
  ``name=compute_score``; the naive/dapo/prime managers' keyword call) and
  :func:`compute_score_batch` (``reward_manager=batch``). Each returns a dict: ``score`` and
  the calibration fields of :data:`FIELDS`, the same keys for every row (verl stacks them).
* OpenRLHF: :func:`reward_func` (``--remote_rm_url`` = this file) returning ``rewards``,
  ``scores`` (correctness, in [0, 1], for ``--dynamic_filtering``) and ``extra_logs``; and
  :func:`serve` (``metacog rlmf serve-reward``), the HTTP server its ``--remote_rm_url
  http://host:port/get_reward`` posts ``{"query", "prompts", "labels"}`` to.

``score`` is ``sum_i w_i r_i`` over the rewards with weights (:data:`DEFAULT_WEIGHTS`; a reward
that returns ``None`` counts 0), plus RLMF's additive metacognitive term ``w_mc Z`` when the
faithfulness reward is at least ``mc_start`` (the official ``mc_reward_weight``; off by
default). RLMF's *advantage* rescaling needs the trainer's group view and is in
:class:`~rlmf_plugin.trainer.RLMFTrainer` (TRL) only.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import re
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from metacog_metrics import Result

_LOG = logging.getLogger(__name__)

__all__ = [
    "ABSENT",
    "DEFAULT_WEIGHTS",
    "FIELDS",
    "MAX_LABEL_CHARS",
    "ExportResult",
    "RewardScorer",
    "compute_score",
    "compute_score_batch",
    "export_dataset",
    "make_label",
    "openrlhf_rows",
    "parse_label",
    "reward_func",
    "serve",
    "verl_rows",
]

#: Reward weights of ``score`` (short names of :data:`rlmf_plugin.rewards.REWARD_NAMES`).
DEFAULT_WEIGHTS: dict[str, float] = {
    "format": 0.5,
    "correctness": 1.0,
    "brier": 0.5,
    "faithful": 3.0,
}
#: Keys of every entry point's per-completion result besides ``score``, all finite numbers:
#: the value each reward paid (before its weight; 0 where it had nothing to compare with),
#: ``confidence``, ``meta`` and ``intrinsic_confidence`` (:data:`ABSENT` where undefined), and
#: flags (1/0): ``answered``, ``graded`` (the grader gave a verdict), ``bad_label`` (a
#: malformed label or target, or an unknown item: floor values), ``timed_out`` (scored
#: without grading after the reward server's deadline).
FIELDS: tuple[str, ...] = (
    "format",
    "strict_format",
    "soft_format",
    "correct",
    "brier",
    "log_score",
    "faithful",
    "metacog_z",
    "confidence",
    "meta",
    "intrinsic_confidence",
    "answered",
    "graded",
    "bad_label",
    "timed_out",
)
#: The value of ``confidence``, ``meta`` and ``intrinsic_confidence`` where undefined.
ABSENT = -1.0
#: Longest label read (characters of JSON); a longer one is malformed.
MAX_LABEL_CHARS = 65_536
_CALIBRATION = (
    "accuracy",
    "stated_confidence",
    "intrinsic_confidence",
    "n_samples",
    "n_answer_classes",
)
_ITEM = ("benchmark", "item_id", "source")
_REWARD_FIELD = {
    "format": "format",
    "strict_format": "strict_format",
    "soft_format": "soft_format",
    "correctness": "correct",
    "brier": "brier",
    "log_score": "log_score",
    "faithful": "faithful",
    "metacog_score": "metacog_z",
}
#: Rewards that read the label (a malformed one gives their floors).
_LABEL_REWARDS = frozenset({"correctness", "brier", "log_score", "faithful", "metacog_score"})
_WEIGHTS_ENV = "METACOG_RLMF_WEIGHTS"


# --------------------------------------------------------------------------------------------
# Labels and exports
# --------------------------------------------------------------------------------------------


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def make_label(row: Mapping[str, Any]) -> str:
    """The label of a dataset row: a JSON object with the item and its calibration fields."""
    keys = (*_ITEM, *_CALIBRATION)
    return json.dumps({k: _finite(row.get(k)) for k in keys}, sort_keys=True)


def _chat(prompt: Any) -> list[dict[str, str]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt]


def verl_rows(rows: Sequence[Mapping[str, Any]], split: str = "train") -> list[dict[str, Any]]:
    """Rows in verl's RL dataset format (see the module doc)."""
    from metacog_tasks.benchmarks import rlmf_family  # verl's ``ability``: the record's family

    out = []
    for i, r in enumerate(rows):
        bench = str(r["benchmark"])
        extra = {
            "split": split,
            "index": i,
            **{k: _finite(r.get(k)) for k in (*_ITEM, *_CALIBRATION)},
        }
        out.append({
            "data_source": f"metacog/{bench}",
            "prompt": _chat(r["prompt"]),
            "ability": rlmf_family(bench),
            "reward_model": {"style": "rule", "ground_truth": make_label(r)},
            "extra_info": extra,
        })  # fmt: skip
    return out


def openrlhf_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows in OpenRLHF's prompt-dataset format (see the module doc)."""
    return [
        {
            "input": _chat(r["prompt"]),
            "label": make_label(r),
            "datasource": f"metacog/{r['benchmark']}",
        }
        for r in rows
    ]


@dataclasses.dataclass(frozen=True)
class ExportResult(Result):
    """What ``export`` wrote: file per format and split, and row counts."""

    out_dir: str
    files: dict[str, str]
    n_train: int
    n_val: int


def _split(n: int, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    order = np.random.default_rng(seed).permutation(n)
    n_val = round(n * val_fraction)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def export_dataset(
    dataset: str | PathLike[str],
    out_dir: str | PathLike[str],
    *,
    formats: Sequence[str] = ("verl", "openrlhf"),
    val_fraction: float = 0.0,
    seed: int = 0,
) -> ExportResult:
    """Write a ``build``/``select`` dataset for verl and/or OpenRLHF.

    Files: ``verl/train.parquet`` (and ``verl/val.parquet``), ``openrlhf/train.jsonl`` (and
    ``openrlhf/val.jsonl``) when ``val_fraction`` > 0 (a seeded split by item).

    Raises:
        ValueError: Unknown format, bad ``val_fraction``, or rows without ``prompt``/
            ``benchmark``/``item_id`` (the message names the first such row).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from metacog_metrics import atomic_write, atomic_write_text
    from rlmf_plugin._io import jsonable, load_rows, write_json

    bad = sorted(set(formats) - {"verl", "openrlhf"})
    if bad:
        raise ValueError(f"unknown export format(s) {bad}; known: verl, openrlhf")
    rows = load_rows(dataset)
    for i, r in enumerate(rows):
        missing = [k for k in ("prompt", "benchmark", "item_id") if r.get(k) in (None, "")]
        if missing:
            raise ValueError(f"{dataset}: row {i + 1} has no {', '.join(missing)}")
    train_idx, val_idx = _split(len(rows), val_fraction, seed)
    out = Path(out_dir)
    files: dict[str, str] = {}
    for split, idx in (("train", train_idx), ("val", val_idx)):
        if split == "val" and not len(idx):
            continue
        part = [rows[i] for i in idx]
        if "verl" in formats:
            table = pa.Table.from_pylist(jsonable(verl_rows(part, split)))
            path = out / "verl" / f"{split}.parquet"
            atomic_write(path, lambda tmp, t=table: pq.write_table(t, tmp))
            files[f"verl/{split}"] = str(path)
        if "openrlhf" in formats:
            path = out / "openrlhf" / f"{split}.jsonl"
            lines = "".join(json.dumps(jsonable(r)) + "\n" for r in openrlhf_rows(part))
            atomic_write_text(path, lines)
            files[f"openrlhf/{split}"] = str(path)
    result = ExportResult(str(out), files, len(train_idx), len(val_idx))
    write_json(out / "export.json", result.to_dict())
    return result


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------

# A completion decoded with its special tokens (OpenRLHF decodes with skip_special_tokens=False)
# ends in end-of-turn markers: <|im_end|>, <|eot_id|>, <｜end▁of▁sentence｜>, </s>, <eos>, ...
_SPECIAL_AT_END = re.compile(
    r"(?:<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</?s>|<(?:eos|pad|end_of_turn|eot)>)\Z"
)
_SPECIAL_WINDOW = 48  # the longest marker above has 44 characters


def _rstrip_end(text: str, end: int) -> int:
    """The end of ``text[:end]`` without its trailing white space (64 characters a step)."""
    while end > 0:
        chunk = text[max(0, end - 64) : end]
        kept = len(chunk.rstrip())
        if kept:
            return end - len(chunk) + kept
        end -= len(chunk)
    return 0


def _strip_special(text: str) -> str:
    """``text`` without its trailing special tokens (and the white space around them).

    Linear in the text's length: each step searches only the last few characters and removes
    a token (one backtracking pattern over the whole text took 6.4 s on 40 kB of spaces).
    """
    end = _rstrip_end(text, len(text))
    found = False
    while True:
        m = _SPECIAL_AT_END.search(text, max(0, end - _SPECIAL_WINDOW), end)
        if m is None:
            return text[:end] if found else text
        found = True
        end = _rstrip_end(text, m.start())


def _read_label(label: Any) -> tuple[dict[str, Any], bool]:
    """A label (JSON text or mapping) as a dict, and whether it was one (never raises)."""
    try:
        if isinstance(label, Mapping):
            return dict(label), True
        if isinstance(label, (bytes, bytearray)):
            if len(label) > MAX_LABEL_CHARS:
                return {}, False
            label = bytes(label).decode("utf-8", "replace")
        if isinstance(label, str) and len(label) <= MAX_LABEL_CHARS:
            value = json.loads(label)
            return (value, True) if isinstance(value, dict) else ({}, False)
    except (ValueError, RecursionError):  # not JSON (or too large a number), nested too deep
        pass
    except Exception:  # a mapping whose items cannot be read
        pass
    return {}, False


def parse_label(label: Any) -> dict[str, Any]:
    """A label (JSON text of at most :data:`MAX_LABEL_CHARS`, or a mapping) as a dict; ``{}``
    for anything else (never raises)."""
    return _read_label(label)[0]


def _row_item(label: Any, extra: Any) -> tuple[dict[str, Any], bool]:
    """The item fields of one row (the label, then verl's ``extra_info`` for what it lacks),
    and whether the label is usable: a JSON object (or mapping) naming a benchmark and item."""
    from rlmf_plugin._grading import _missing

    item, ok = _read_label(label)
    try:
        if isinstance(extra, Mapping):
            for k in (*_ITEM, *_CALIBRATION):
                if item.get(k) is None and extra.get(k) is not None:
                    item[k] = extra[k]
        ok = ok and not (_missing(item.get("benchmark")) or _missing(item.get("item_id")))
    except Exception:  # a mapping that fails on lookup
        return {}, False
    return item, ok


def _code(value: float) -> float:
    return ABSENT if math.isnan(value) else float(value)


class _WrongGrader:
    """A grader that grades nothing: every answer is wrong (rows scored after a timeout)."""

    def verdict(self, benchmark: Any, item_id: Any, source: Any, answer: str):
        from rlmf_plugin._grading import Verdict

        return Verdict(0.0, "timed_out")


class RewardScorer:
    """Scores completions of exported rows with the TRL reward functions, one grader shared.

    Safe to call from several threads at once (the reward server does).

    Args:
        weights: Reward short name -> weight in ``score`` (:data:`DEFAULT_WEIGHTS` when None).
        mc_weight: Weight of RLMF's additive metacognitive term (0: off).
        mc_start: The term is added only where the faithfulness reward is at least this.
        tau: The metacognitive score's tolerance.
        benchmark_options: Per-benchmark grader options (``{"scicode": {"timeout_s": 10}}``).
        options: Per-reward factory options (see :func:`rlmf_plugin.rewards.make_rewards`).

    Raises:
        ValueError: An unknown reward name or option, or a weight that is not a finite number.
    """

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        *,
        mc_weight: float = 0.0,
        mc_start: float = 0.0,
        tau: float = 0.10,
        benchmark_options: Mapping[str, Mapping[str, Any]] | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        from rlmf_plugin._grading import ItemGrader
        from rlmf_plugin.rewards import REWARD_NAMES, make_rewards

        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        unknown = sorted(set(self.weights) - set(REWARD_NAMES))
        if unknown:
            raise ValueError(f"unknown reward(s) {unknown}; known: {list(REWARD_NAMES)}")
        numbers = {**self.weights, "mc_weight": mc_weight, "mc_start": mc_start, "tau": tau}
        for key, value in numbers.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{key} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{key} must be finite, got {value!r}")
        self.mc_weight, self.mc_start = float(mc_weight), float(mc_start)
        self._grader = ItemGrader({k: dict(v) for k, v in (benchmark_options or {}).items()})
        self._names = list(REWARD_NAMES)
        # One response at a time, no group: the faithful target is the label's item-level g.
        self._funcs = make_rewards(
            self._names, grader=self._grader, target="item", tau=tau, options=options
        )
        self._wrong_grader = _WrongGrader()
        self._wrong = make_rewards(
            self._names,
            grader=self._wrong_grader,  # type: ignore[arg-type]
            target="item",
            tau=tau,
            options=options,
        )

    def score(
        self,
        completions: Sequence[Any],
        labels: Sequence[Any],
        extra: Sequence[Any] | None = None,
        *,
        timed_out: bool = False,
    ) -> list[dict[str, float]]:
        """``score`` and :data:`FIELDS` per completion: finite numbers only; never raises on
        any completion text or label.

        Args:
            completions: The responses (without the prompt).
            labels: Labels (:func:`make_label` JSON or mappings) naming each item.
            extra: verl ``extra_info`` mappings; their calibration fields fill what the label
                lacks.
            timed_out: Grade nothing: every answer counts wrong (rows past a deadline).

        Raises:
            ValueError: ``labels`` or ``extra`` do not hold one entry per completion.
            SandboxUnavailableError: A benchmark that runs model code, on a machine with no
                sandbox boundary (rewards are never silently left unpaid for that).
        """
        from rlmf_plugin._format import completion_text, read_unit
        from rlmf_plugin.rewards import FLOORS, _correctness, _parse_all

        completions, labels = list(completions), list(labels)
        n = len(completions)
        extras = [None] * n if extra is None else list(extra)
        if len(labels) != n or len(extras) != n:
            raise ValueError(
                f"{n} completions but {len(labels)} labels"
                + ("" if extra is None else f" and {len(extras)} extra_info entries")
            )
        rows = [_row_item(lab, more) for lab, more in zip(labels, extras)]
        columns = {
            k: [it.get(k) if ok else None for it, ok in rows]
            for k in (*_ITEM, "intrinsic_confidence")
        }
        texts = [_strip_special(completion_text(c)) for c in completions]
        funcs = self._wrong if timed_out else self._funcs
        values = {
            name: f(prompts=[""] * n, completions=texts, **columns)
            for name, f in zip(self._names, funcs)
        }
        parsed = _parse_all(texts)
        grader = self._wrong_grader if timed_out else self._grader
        verdicts = _correctness(grader)(parsed, columns, "score")  # type: ignore[arg-type]
        out = []
        for i, ((item, label_ok), p, v) in enumerate(zip(rows, parsed, verdicts)):
            target, target_status = read_unit(item.get("intrinsic_confidence"))
            bad = not label_ok or v.status == "bad_label" or target_status == "bad"
            row: dict[str, float] = {}
            total = 0.0
            for name in self._names:
                value = values[name][i]
                if bad and name in _LABEL_REWARDS:
                    value = FLOORS[name]  # the documented floor of a malformed label
                paid = 0.0 if value is None else float(value)
                row[_REWARD_FIELD[name]] = paid
                total += self.weights.get(name, 0.0) * paid
            z, faith = values["metacog_score"][i], row["faithful"]
            if self.mc_weight and z is not None and not bad and faith >= self.mc_start:
                total += self.mc_weight * z
            row["confidence"] = _code(p.confidence)
            row["meta"] = _code(p.meta)
            row["intrinsic_confidence"] = _code(target)
            row["answered"] = float(p.has_answer)
            row["graded"] = float(label_ok and v.status in ("ok", "grader_error"))
            row["bad_label"] = float(bad)
            row["timed_out"] = float(timed_out)
            out.append({"score": total, **{k: row[k] for k in FIELDS}})
        return out


_SCORERS: dict[str, RewardScorer] = {}
_SCORERS_LOCK = threading.Lock()


def _scorer(kwargs: Mapping[str, Any]) -> RewardScorer:
    """The scorer for these options (``weights``, ``mc_weight``, ``mc_start``, ``tau``,
    ``options``).

    Options come from the call (verl ``custom_reward_function.reward_kwargs``), else from the
    ``METACOG_RLMF_WEIGHTS`` environment variable (JSON: ``{"weights": {...}, "mc_weight": x}``
    or a plain weights mapping), else the defaults. One scorer per distinct option set.
    """
    keys = ("weights", "mc_weight", "mc_start", "tau", "options")
    opts = {k: kwargs[k] for k in keys if k in kwargs}
    if not opts and os.environ.get(_WEIGHTS_ENV):
        env = json.loads(os.environ[_WEIGHTS_ENV])
        if not isinstance(env, dict):
            raise ValueError(f"{_WEIGHTS_ENV} must hold a JSON object")
        opts = env if set(env) & set(keys) else {"weights": env}
    key = json.dumps(opts, sort_keys=True, default=str)
    with _SCORERS_LOCK:
        if key not in _SCORERS:
            _SCORERS[key] = RewardScorer(
                opts.get("weights"),
                mc_weight=opts.get("mc_weight", 0.0),
                mc_start=opts.get("mc_start", 0.0),
                tau=opts.get("tau", 0.10),
                options=opts.get("options"),
            )
        return _SCORERS[key]


def compute_score(
    data_source: Any,
    solution_str: Any,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """verl's custom reward function: ``score`` and :data:`FIELDS` of one response.

    Never raises on any response or label (a malformed label gives the floor values and
    ``bad_label`` 1); raises ``SandboxUnavailableError`` for a benchmark that runs model code
    on a machine with no sandbox boundary.

    Args:
        data_source: ``metacog/<benchmark>`` (unused: the label names the item).
        solution_str: The decoded response.
        ground_truth: ``reward_model.ground_truth`` of the exported row (the label).
        extra_info: The row's ``extra_info`` (calibration fields).
        **kwargs: ``weights``, ``mc_weight``, ``mc_start``, ``tau``, ``options`` (from
            ``custom_reward_function.reward_kwargs``); others verl may add are ignored.
    """
    del data_source
    return _scorer(kwargs).score([solution_str], [ground_truth], [extra_info])[0]


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """verl's batch reward manager entry point (one dict per response, as :func:`compute_score`).

    Raises:
        ValueError: The sequences do not all have the same length.
    """
    lengths = {
        "data_sources": len(data_sources),
        "solution_strs": len(solution_strs),
        "ground_truths": len(ground_truths),
    }
    if extra_infos is not None:
        lengths["extra_infos"] = len(extra_infos)
    if len(set(lengths.values())) > 1:
        raise ValueError(f"compute_score_batch: lengths differ: {lengths}")
    extra = list(extra_infos) if extra_infos is not None else None
    return _scorer(kwargs).score(list(solution_strs), list(ground_truths), extra)


def _response(query: Any, prompt: Any) -> str:
    """The response part of OpenRLHF's ``query`` (prompt + response, decoded)."""
    from rlmf_plugin._format import MAX_COMPLETION_CHARS, completion_text

    query, prompt = completion_text(query), completion_text(prompt)
    if prompt and query.startswith(prompt):
        return query[len(prompt) :]
    if len(query) > len(prompt) + MAX_COMPLETION_CHARS:
        return query  # too long to hold a response of the allowed length: no answer
    tail = prompt[-200:]
    at = query.rfind(tail) if tail else -1
    return query[at + len(tail) :] if at >= 0 else query


def reward_func(
    queries: Sequence[Any], prompts: Sequence[Any] | None, labels: Sequence[Any], **kwargs: Any
) -> dict[str, Any]:
    """OpenRLHF's custom reward function (``--remote_rm_url path/to/engines.py``).

    Returns:
        ``{"rewards": tensor, "scores": tensor, "extra_logs": {field: tensor}}``; ``scores`` is
        the correctness reward (in [0, 1]) for ``--dynamic_filtering``; ``extra_logs`` holds
        :data:`FIELDS`, finite numbers only (``torch.tensor`` takes every value).

    Raises:
        ValueError: ``prompts`` or ``labels`` do not hold one entry per query.
    """
    import torch

    result = _scored_lists(queries, prompts, labels, kwargs)
    return {
        "rewards": torch.tensor(result["rewards"], dtype=torch.float32),
        "scores": torch.tensor(result["scores"], dtype=torch.float32),
        "extra_logs": {
            k: torch.tensor(v, dtype=torch.float32) for k, v in result["extra_logs"].items()
        },
    }


def _responses(queries: Any, prompts: Any, labels: Any) -> tuple[list[str], list[Any]]:
    queries, labels = list(queries), list(labels)
    prompts = [""] * len(queries) if prompts is None else list(prompts)
    for name, values in (("labels", labels), ("prompts", prompts)):
        if len(values) != len(queries):
            raise ValueError(f"{len(queries)} queries but {len(values)} {name}")
    return [_response(q, p) for q, p in zip(queries, prompts)], labels


def _lists(rows: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    return {
        "rewards": [r["score"] for r in rows],
        "scores": [r["correct"] for r in rows],
        "extra_logs": {k: [r[k] for r in rows] for k in FIELDS},
    }


def _scored_lists(queries, prompts, labels, kwargs) -> dict[str, Any]:
    responses, labels = _responses(queries, prompts, labels)
    return _lists(_scorer(kwargs).score(responses, labels))


def _score_within(
    scorer: RewardScorer, responses: list[str], labels: list[Any], timeout_s: float
) -> list[dict[str, float]]:
    """Rows scored one by one in a worker thread; those not done after ``timeout_s`` seconds
    are scored without grading (every answer wrong, ``timed_out`` 1)."""
    out: list[dict[str, float] | None] = [None] * len(responses)
    stop = threading.Event()
    failed: list[BaseException] = []

    def work() -> None:
        for i in range(len(responses)):
            if stop.is_set():
                return
            try:
                out[i] = scorer.score([responses[i]], [labels[i]])[0]
            except Exception as exc:  # no sandbox: the request fails, never scored as wrong
                failed.append(exc)
                return

    worker = threading.Thread(target=work, daemon=True, name="metacog-reward")
    worker.start()
    worker.join(timeout_s)
    stop.set()
    if failed:
        raise failed[0]
    done = list(out)
    late = [i for i, r in enumerate(done) if r is None]
    if late:
        texts, late_labels = [responses[i] for i in late], [labels[i] for i in late]
        for i, r in zip(late, scorer.score(texts, late_labels, timed_out=True)):
            done[i] = r
    return done  # type: ignore[return-value]


def serve(
    host: str = "127.0.0.1",
    port: int = 5000,
    *,
    weights: Mapping[str, float] | None = None,
    mc_weight: float = 0.0,
    mc_start: float = 0.0,
    timeout_s: float = 60.0,
    max_body_bytes: int = 256 * 2**20,
) -> ThreadingHTTPServer:
    """An HTTP reward server in OpenRLHF's remote-RM contract (not started; call
    ``serve_forever``).

    ``POST`` (any path, e.g. ``/get_reward``) a JSON ``{"query": [...], "prompts": [...],
    "labels": [...]}``; the answer is ``{"rewards": [...], "scores": [...], "extra_logs":
    {field: [...]}}``, finite numbers only (an undefined confidence, meta or intrinsic
    confidence is :data:`ABSENT`). Requests are served concurrently; the rows of a request not
    scored within ``timeout_s`` seconds are scored without grading (wrong, ``timed_out`` 1),
    so one slow request neither blocks the others nor stalls the trainer. A malformed request
    (not JSON, not an object, lists missing or of different lengths, larger than
    ``max_body_bytes``) gets HTTP 400 with the reason; a request for a benchmark that runs
    model code on a machine with no sandbox boundary gets HTTP 503 with the sandbox's error.
    """
    from metacog_tasks.sandbox import SandboxUnavailableError

    opts: dict[str, Any] = {"mc_weight": mc_weight, "mc_start": mc_start}
    if weights is not None:
        opts["weights"] = dict(weights)
    scorer = _scorer(opts)  # fail now on bad weights, not at the first request
    if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a positive number, got {timeout_s!r}")

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: Mapping[str, Any]) -> None:
            data = json.dumps(body, allow_nan=False).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= max_body_bytes:
                    raise ValueError(f"the body must hold 0 to {max_body_bytes} bytes")
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                queries = body.get("query", body.get("queries"))
                labels = body.get("labels")
                prompts = body.get("prompts")
                if not isinstance(queries, list) or not isinstance(labels, list):
                    raise ValueError("the body needs lists `query` and `labels`")
                if prompts is not None and not isinstance(prompts, list):
                    raise ValueError("`prompts` must be a list")
                responses, labels = _responses(queries, prompts, labels)
            except (ValueError, RecursionError) as exc:
                self._send(400, {"error": str(exc) or type(exc).__name__})
                return
            try:
                rows = _score_within(scorer, responses, labels, timeout_s)
            except SandboxUnavailableError as exc:
                _LOG.error("serve-reward: %s", exc)
                self._send(503, {"error": str(exc)})
                return
            self._send(200, _lists(rows))

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: one line per request would drown the training logs

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
