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

__all__ = [
    "DEFAULT_WEIGHTS",
    "FIELDS",
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
#: Keys of every entry point's per-completion result besides ``score`` (NaN when undefined).
FIELDS: tuple[str, ...] = (
    "format",
    "correct",
    "brier",
    "log_score",
    "faithful",
    "metacog_z",
    "confidence",
    "meta",
    "intrinsic_confidence",
)
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
    "correctness": "correct",
    "brier": "brier",
    "log_score": "log_score",
    "faithful": "faithful",
    "metacog_score": "metacog_z",
}
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


def parse_label(label: Any) -> dict[str, Any]:
    """A label (JSON text or mapping) as a dict; ``{}`` for anything else (never raises)."""
    if isinstance(label, Mapping):
        return dict(label)
    if isinstance(label, (bytes, bytearray)):
        label = label.decode("utf-8", "replace")
    if isinstance(label, str):
        try:
            value = json.loads(label)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


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
_TRAILING_SPECIAL = re.compile(
    r"(?:\s*(?:<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</?s>|<(?:eos|pad|end_of_turn|eot)>))+\s*\Z"
)


def _strip_special(text: str) -> str:
    return _TRAILING_SPECIAL.sub("", text)


class RewardScorer:
    """Scores completions of exported rows with the TRL reward functions, one grader shared.

    Args:
        weights: Reward short name -> weight in ``score`` (:data:`DEFAULT_WEIGHTS` when None).
        mc_weight: Weight of RLMF's additive metacognitive term (0: off).
        mc_start: The term is added only where the faithfulness reward is at least this.
        tau: The metacognitive score's tolerance.
        benchmark_options: Per-benchmark grader options (``{"scicode": {"timeout_s": 10}}``).

    Raises:
        ValueError: An unknown reward name in ``weights``.
    """

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        *,
        mc_weight: float = 0.0,
        mc_start: float = 0.0,
        tau: float = 0.10,
        benchmark_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        from rlmf_plugin._grading import ItemGrader
        from rlmf_plugin.rewards import REWARD_NAMES, make_rewards

        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        unknown = sorted(set(self.weights) - set(REWARD_NAMES))
        if unknown:
            raise ValueError(f"unknown reward(s) {unknown}; known: {list(REWARD_NAMES)}")
        self.mc_weight, self.mc_start = float(mc_weight), float(mc_start)
        grader = ItemGrader({k: dict(v) for k, v in (benchmark_options or {}).items()})
        self._names = list(REWARD_NAMES)
        self._funcs = make_rewards(self._names, grader=grader, tau=tau)
        self._lock = threading.Lock()  # the rewards' per-batch caches are not thread-safe

    def score(
        self, completions: Sequence[str], labels: Sequence[Any], extra: Sequence[Any] | None = None
    ) -> list[dict[str, float]]:
        """``score`` and :data:`FIELDS` per completion (never raises on any text or label).

        Args:
            completions: The responses (without the prompt).
            labels: Labels (:func:`make_label` JSON or mappings) naming each item.
            extra: verl ``extra_info`` mappings; their calibration fields fill what the label
                lacks.
        """
        from rlmf_plugin._format import parse_completion

        n = len(completions)
        items = []
        for i in range(n):
            item = parse_label(labels[i])
            more = extra[i] if extra is not None and isinstance(extra[i], Mapping) else {}
            for k in (*_ITEM, *_CALIBRATION):
                if item.get(k) is None and more.get(k) is not None:
                    item[k] = more[k]
            items.append(item)
        texts = [_strip_special(str(c or "")) for c in completions]
        columns = {k: [it.get(k) for it in items] for k in (*_ITEM, "intrinsic_confidence")}
        with self._lock:
            values = {
                name: f(prompts=[""] * n, completions=list(texts), **columns)
                for name, f in zip(self._names, self._funcs)
            }
        parsed = [parse_completion(t) for t in texts]
        out = []
        for i in range(n):
            row: dict[str, float] = {}
            total = 0.0
            for name in self._names:
                v = values[name][i]
                row[_REWARD_FIELD[name]] = math.nan if v is None else float(v)
                if v is not None:
                    total += self.weights.get(name, 0.0) * float(v)
            z, faith = row["metacog_z"], row["faithful"]
            if self.mc_weight and not math.isnan(z) and faith >= self.mc_start:
                total += self.mc_weight * z
            row["confidence"] = parsed[i].confidence
            row["meta"] = parsed[i].meta
            g = items[i].get("intrinsic_confidence")
            row["intrinsic_confidence"] = math.nan if g is None else float(g)
            out.append({"score": total, **{k: row[k] for k in FIELDS}})
        return out


_SCORERS: dict[str, RewardScorer] = {}


def _scorer(kwargs: Mapping[str, Any]) -> RewardScorer:
    """The scorer for these options (``weights``, ``mc_weight``, ``mc_start``, ``tau``).

    Options come from the call (verl ``custom_reward_function.reward_kwargs``), else from the
    ``METACOG_RLMF_WEIGHTS`` environment variable (JSON: ``{"weights": {...}, "mc_weight": x}``
    or a plain weights mapping), else the defaults. One scorer per distinct option set.
    """
    opts = {k: kwargs[k] for k in ("weights", "mc_weight", "mc_start", "tau") if k in kwargs}
    if not opts and os.environ.get(_WEIGHTS_ENV):
        env = json.loads(os.environ[_WEIGHTS_ENV])
        opts = env if "weights" in env else {"weights": env}
    key = json.dumps(opts, sort_keys=True, default=str)
    if key not in _SCORERS:
        _SCORERS[key] = RewardScorer(
            opts.get("weights"),
            mc_weight=float(opts.get("mc_weight", 0.0)),
            mc_start=float(opts.get("mc_start", 0.0)),
            tau=float(opts.get("tau", 0.10)),
        )
    return _SCORERS[key]


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """verl's custom reward function: ``score`` and the calibration fields of one response.

    Args:
        data_source: ``metacog/<benchmark>`` (unused: the label names the item).
        solution_str: The decoded response.
        ground_truth: ``reward_model.ground_truth`` of the exported row (the label).
        extra_info: The row's ``extra_info`` (calibration fields).
        **kwargs: ``weights``, ``mc_weight``, ``mc_start``, ``tau`` (from
            ``custom_reward_function.reward_kwargs``); others verl may add are ignored.
    """
    del data_source
    return _scorer(kwargs).score([solution_str], [ground_truth], [extra_info])[0]


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """verl's batch reward manager entry point (one dict per response, as :func:`compute_score`)."""
    del data_sources
    extra = list(extra_infos) if extra_infos is not None else None
    return _scorer(kwargs).score(list(solution_strs), list(ground_truths), extra)


def _response(query: str, prompt: str) -> str:
    """The response part of OpenRLHF's ``query`` (prompt + response, decoded)."""
    query, prompt = str(query), str(prompt or "")
    if prompt and query.startswith(prompt):
        return query[len(prompt) :]
    tail = prompt[-200:]
    at = query.rfind(tail) if tail else -1
    return query[at + len(tail) :] if at >= 0 else query


def reward_func(
    queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **kwargs: Any
) -> dict[str, Any]:
    """OpenRLHF's custom reward function (``--remote_rm_url path/to/engines.py``).

    Returns:
        ``{"rewards": tensor, "scores": tensor, "extra_logs": {field: tensor}}``; ``scores`` is
        the correctness (0 when ungradable) for ``--dynamic_filtering``; ``extra_logs`` holds
        :data:`FIELDS` (NaN where undefined).
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


def _scored_lists(queries, prompts, labels, kwargs) -> dict[str, Any]:
    prompts = list(prompts) if prompts is not None else [""] * len(queries)
    responses = [_response(q, p) for q, p in zip(queries, prompts)]
    rows = _scorer(kwargs).score(responses, list(labels))
    correct = [r["correct"] for r in rows]
    return {
        "rewards": [r["score"] for r in rows],
        "scores": [0.0 if math.isnan(c) else c for c in correct],
        "extra_logs": {k: [r[k] for r in rows] for k in FIELDS},
    }


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def serve(
    host: str = "127.0.0.1",
    port: int = 5000,
    *,
    weights: Mapping[str, float] | None = None,
    mc_weight: float = 0.0,
    mc_start: float = 0.0,
) -> ThreadingHTTPServer:
    """An HTTP reward server in OpenRLHF's remote-RM contract (not started; call
    ``serve_forever``).

    ``POST`` (any path, e.g. ``/get_reward``) a JSON ``{"query": [...], "prompts": [...],
    "labels": [...]}``; the answer is ``{"rewards": [...], "scores": [...], "extra_logs":
    {field: [...]}}`` (``null`` where a field is undefined). A malformed request gets HTTP 400
    with the reason.
    """
    opts: dict[str, Any] = {"mc_weight": mc_weight, "mc_start": mc_start}
    if weights is not None:
        opts["weights"] = dict(weights)
    _scorer(opts)  # fail now on bad weights, not at the first request

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: Mapping[str, Any]) -> None:
            data = json.dumps(_json_safe(body)).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                queries = body.get("query", body.get("queries"))
                labels = body.get("labels")
                if not isinstance(queries, list) or not isinstance(labels, list):
                    raise ValueError("the body needs lists `query` and `labels`")
                if len(labels) != len(queries):
                    raise ValueError(f"{len(queries)} queries but {len(labels)} labels")
                prompts = body.get("prompts") or [""] * len(queries)
            except (ValueError, AttributeError) as exc:
                self._send(400, {"error": str(exc)})
                return
            self._send(200, _scored_lists(queries, prompts, labels, opts))

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: one line per request would drown the training logs

    return ThreadingHTTPServer((host, port), Handler)
