"""The random-state and tie conventions every analysis shares (metacog_metrics._conventions)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from metacog_metrics._conventions import TIE_ULPS, child_sequence, seed_sequence, tie_tolerance


def test_seed_sequence_of_an_int_is_numpys_own():
    ss = seed_sequence(12345)
    assert isinstance(ss, np.random.SeedSequence) and ss.entropy == 12345
    assert ss.spawn_key == ()
    assert np.random.default_rng(ss).random() == np.random.default_rng(12345).random()


def test_seed_sequence_passes_a_seed_sequence_through():
    ss = np.random.SeedSequence(7, spawn_key=(3,))
    assert seed_sequence(ss) is ss


def test_seed_sequence_of_a_generator_is_drawn_from_its_stream():
    gen = np.random.default_rng(5)
    ss = seed_sequence(gen)
    # four 63-bit draws of the generator, written out independently
    assert ss.entropy == np.random.default_rng(5).integers(0, 2**63, size=4).tolist()
    # the generator moved on: a second call gives another sequence
    assert seed_sequence(gen).entropy != ss.entropy
    # draws from [0, 2**63), not [1, 2**63): for seed 0 the two ranges give different values
    for seed in range(4):
        expected = np.random.default_rng(seed).integers(0, 2**63, size=4).tolist()
        assert seed_sequence(np.random.default_rng(seed)).entropy == expected


def test_seed_sequence_of_none_is_fresh_entropy():
    assert seed_sequence(None).entropy != seed_sequence(None).entropy


def test_child_sequence_of_an_int_seed_is_seed_and_crc32_of_the_names():
    ss = child_sequence(4, "mmlu_pro", "prospective")
    code = zlib.crc32(b"mmlu_pro\x1fprospective")
    assert ss.entropy == [4, code] and ss.spawn_key == ()
    assert (
        np.random.default_rng(ss).random()
        == np.random.default_rng(np.random.SeedSequence([4, code])).random()
    )


def test_child_sequence_separates_the_names():
    # the unit separator keeps ("a", "b") apart from ("ab",) and ("a b",)
    streams = {tuple(child_sequence(0, *key).entropy) for key in [("a", "b"), ("ab",), ("a b",)]}
    assert len(streams) == 3
    # the same names give the same stream whatever else was drawn before
    assert child_sequence(0, "m").entropy == child_sequence(0, "m").entropy
    assert child_sequence(0, "m").entropy != child_sequence(1, "m").entropy


def test_child_sequence_of_a_seed_sequence_extends_its_spawn_key():
    parent = np.random.SeedSequence(99, spawn_key=(2,))
    ss = child_sequence(parent, "model-a")
    assert ss.entropy == 99
    assert ss.spawn_key == (2, zlib.crc32(b"model-a"))


def test_tie_tolerance_is_100_ulps_of_the_magnitude():
    assert TIE_ULPS == 100
    eps = np.finfo(float).eps
    np.testing.assert_array_equal(
        tie_tolerance([1.0, -2.0, 0.0, 0.25]), [100 * eps, 200 * eps, 0.0, 25 * eps]
    )
    assert tie_tolerance(-0.5) == pytest.approx(50 * eps, rel=0, abs=0)
    # a draw one rounding error from the observed value lies inside the band, a real
    # difference of 1e-12 outside it
    obs = 0.1 + 0.2
    assert abs(0.3 - obs) <= tie_tolerance(obs)
    assert tie_tolerance(obs) < 1e-12


def test_value_ties_makes_decimal_ties_ties_and_keeps_real_differences():
    from metacog_metrics._conventions import TIE_DECIMALS, value_ties

    assert TIE_DECIMALS == 12
    assert 0.9 - 0.7 != 0.5 - 0.3  # binary floating point: last-bit noise
    a, b = value_ties([0.9 - 0.7, 0.5 - 0.3])
    assert a == b == 0.2
    # a difference in the 11th decimal is real and kept; one in the 13th is noise
    x = value_ties([0.1, 0.1 + 1e-11, 0.1 + 1e-13])
    assert x[1] - x[0] == pytest.approx(1e-11, rel=1e-3) and x[2] == x[0]
    out = value_ties([1, 2])
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0]


def test_child_sequence_codes_the_names_in_utf8():
    # the names' bytes are UTF-8, written out by hand
    assert child_sequence(1, "café", "ß").entropy == [1, zlib.crc32(b"caf\xc3\xa9\x1f\xc3\x9f")]


def test_tie_tolerance_converts_to_float_before_the_magnitude():
    # the most negative integer of a signed dtype has no positive counterpart in that dtype
    # (np.abs(np.int8(-128)) wraps to -128): the magnitude is taken in float64, so the band
    # is 128 and 2**63 ulps wide, not negative
    eps = 2.0**-52
    low8 = tie_tolerance(np.array([-128, 3], dtype=np.int8))
    assert low8.dtype == np.float64
    np.testing.assert_array_equal(low8, [12800 * eps, 300 * eps])
    assert tie_tolerance(np.int64(-(2**63))) == 2.0**63 * 100 * eps
