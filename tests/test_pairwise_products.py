"""All-pairs tables as one-hot products: the tables against counts item by item, tau-b
against the project's exact paths, the draws against each null's law (NumPy and torch's CPU
tensors; the registered samplers bind on a CUDA device only)."""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.pairwise import joint_draws as jd
from metacog_metrics.pairwise.nulls import get_null
from metacog_metrics.pairwise.products import categories, pair_tables, products, torch_device
from metacog_metrics.pairwise.tau import _tau_b_tables, pairwise_taus
from tests.availability import unavailable

NULLS = ("base_rate", "calibration_preserving")


def _torch():
    if importlib.util.find_spec("torch") is None:
        unavailable("torch is not installed (the gpu extra)")
    import torch

    return torch


def _devices() -> list:
    return [None, "cpu"]


def _data(kind: str, n_items: int, m: int, seed: int):
    rng = np.random.default_rng(seed)
    perf = (rng.random((n_items, m)) < rng.uniform(0.3, 0.8, m)).astype(float)
    if kind == "binary":
        conf = np.where(rng.random((n_items, m)) < 0.7, perf, 1 - perf)
    else:  # five levels with unequal steps (differences tie across level pairs)
        conf = rng.choice([0.0, 0.1, 0.25, 0.5, 1.0], size=(n_items, m))
    return conf, perf


def _device(device):
    return None if device is None else _torch().device(device)


def _as(x, device):
    return x if device is None else _torch().as_tensor(x, device=device)


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("kind", ["binary", "levels"])
def test_pair_tables_count_every_item_of_every_pair(kind, device):
    conf, perf = _data(kind, 40, 5, 1)
    dev = _device(device)
    cat = categories(conf, perf)
    ia, ib = np.triu_indices(5, 1)
    tables = pair_tables(_as(cat.level, dev), _as(cat.perf, dev), cat, ia, ib, dev)
    diffs = np.unique(np.round(conf[:, :, None] - conf[:, None, :], 12))
    assert tables.shape == (ia.size, diffs.size, 3) and tables.dtype == np.int64
    for k, (a, b) in enumerate(zip(ia, ib)):
        want = np.zeros((diffs.size, 3), dtype=np.int64)
        for i in range(conf.shape[0]):  # item by item
            row = int(np.flatnonzero(np.isclose(diffs, conf[i, a] - conf[i, b]))[0])
            want[row, int(perf[i, a] - perf[i, b]) + 1] += 1
        np.testing.assert_array_equal(tables[k], want)
    np.testing.assert_allclose(_tau_b_tables(tables), pairwise_taus(conf, perf, pairs=(ia, ib)),
                               rtol=1e-12)  # fmt: skip


def test_categories_refuse_too_many_levels():
    conf = np.linspace(0, 1, 26).reshape(13, 2)
    assert categories(conf, np.ones_like(conf)) is None
    assert categories(conf, np.ones_like(conf), max_levels=26).n_levels == 26


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("kind", ["binary", "levels"])
@pytest.mark.parametrize("null", NULLS)
def test_product_draws_follow_each_nulls_law(null, kind, device):
    # against the null's plain NumPy sampler (itself held to the null's law by the registry's
    # contract test): every pair's tau-b and the mean over pairs, two-sample KS
    conf, perf = _data(kind, 30, 4, 2)
    split = null == "base_rate"
    ia, ib = np.triu_indices(4, 1)
    inputs = jd.JointInputs(conf, perf, None, kind == "binary", ia, ib)
    batch, draw = products(split, _device(device)).bind(inputs)
    got = np.concatenate([draw(batch, ss) for ss in np.random.SeedSequence(3).spawn(30)])
    plain = jd.bits(split) if kind == "binary" else jd.values(split)
    ref = plain.bind(inputs)[1](got.shape[0], np.random.SeedSequence(4))
    for k in range(ia.size):
        assert stats.ks_2samp(got[:, k], ref[:, k]).pvalue > 1e-3, (k, null)
    assert stats.ks_2samp(got.mean(axis=1), ref.mean(axis=1)).pvalue > 1e-3
    # the same seed, the same draws
    np.testing.assert_array_equal(draw(7, np.random.SeedSequence(5)),
                                  draw(7, np.random.SeedSequence(5)))  # fmt: skip


def test_product_draws_keep_what_each_null_keeps():
    # one tiny model pair: under the calibration-preserving null every draw's tables keep
    # each model's (conf, perf) categories; under the base-rate null only the margins
    conf, perf = _data("binary", 6, 2, 5)
    cat = categories(conf, perf)
    rng = np.random.default_rng(0)
    for split, _ in itertools.product((False, True), range(50)):
        o = np.argsort(rng.random(cat.level.shape), axis=1)
        lv = np.take_along_axis(cat.level, o, axis=1)
        op = np.argsort(rng.random(cat.level.shape), axis=1) if split else o
        pf = np.take_along_axis(cat.perf, op, axis=1)
        assert (np.sort(lv, axis=1) == np.sort(cat.level, axis=1)).all()
        if not split:
            keep = np.sort(cat.level * 2 + cat.perf, axis=1)
            assert (np.sort(lv * 2 + pf, axis=1) == keep).all()
        t = pair_tables(lv, pf, cat, np.array([0]), np.array([1]))
        assert t.sum() == 6


_ASK = """
import sys
from metacog_metrics.pairwise import products
products.GPU_DRIVER_FILES = tuple(sys.argv[1:])
print(products.torch_device(), "torch" in sys.modules)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the driver files are Linux's")
def test_torch_is_not_imported_to_find_no_gpu_driver():
    # Importing torch costs about 0.8 s: without a GPU driver's device file the answer is None
    # without it; with one (here a file that exists) torch is imported and asked.
    _torch()
    env = {k: v for k, v in os.environ.items() if not k.startswith("METACOG_")}

    def ask(*files):
        run = subprocess.run([sys.executable, "-c", _ASK, *files], capture_output=True,
                             text=True, env=env, check=True)  # fmt: skip
        return run.stdout.split()

    assert ask("/nonexistent/nvidiactl") == ["None", "False"]
    device, imported = ask(sys.executable)
    assert imported == "True" and device in ("None", "cuda")


def test_registered_product_samplers_bind_only_on_a_torch_device(monkeypatch):
    conf, perf = _data("binary", 20, 3, 0)
    ia, ib = np.triu_indices(3, 1)
    inputs = jd.JointInputs(conf, perf, None, True, ia, ib)
    monkeypatch.delenv("METACOG_TORCH_DEVICE", raising=False)
    monkeypatch.setenv("METACOG_NO_TORCH", "1")
    for null in NULLS:
        first = get_null(null).joint_samplers["binary", "complete", "numpy"][0]
        assert first.engine == "torch" and first.bind(inputs) is None
    monkeypatch.delenv("METACOG_NO_TORCH")
    torch = _torch()
    if not torch.cuda.is_available():  # on a CPU machine nothing changes
        assert torch_device() is None
        assert first.bind(inputs) is None
    monkeypatch.setenv("METACOG_TORCH_DEVICE", "cpu")
    assert torch_device() == torch.device("cpu")
    assert first.bind(inputs) is not None
    # ragged data and too many levels stay with the other samplers
    ragged = jd.JointInputs(conf, perf, np.ones(conf.shape, bool), True, ia, ib)
    assert first.bind(ragged) is None
    many = jd.JointInputs(np.linspace(0, 1, 60).reshape(20, 3), perf, None, False, ia, ib)
    assert first.bind(many) is None
