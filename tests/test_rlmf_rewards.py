"""RLMF rewards against hand-computed values, and their contract (never raise, None, names)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.benchmarks import get_benchmark
from rlmf_plugin._format import parse_completion
from rlmf_plugin._grading import ItemGrader
from rlmf_plugin.rewards import (
    DEFAULT_REWARDS,
    FLOORS,
    REWARD_NAMES,
    brier_reward,
    correctness_reward,
    faithful_reward,
    format_reward,
    log_score_reward,
    make_rewards,
    metacog_score_reward,
    soft_format_reward,
    strict_format_reward,
)

MMLU = get_benchmark("mmlu_pro")
ITEM = MMLU.load("bundled")[0]
RIGHT = MMLU.reference_response(ITEM)
WRONG = MMLU.wrong_response(ITEM, np.random.default_rng(0))
GRADER = ItemGrader()  # items loaded once; the reward functions are built in each test


def _rewards(**options) -> dict:
    """Fresh reward functions (built in the test, not at import: what the factories do is
    tested too)."""
    options.setdefault("target", "item")  # the column target: values set by the test
    return {f.__name__: f for f in make_rewards(grader=GRADER, **options)}


def _call(name: str, completions, intrinsic, rewards: dict | None = None, **extra):
    n = len(completions)
    logged: dict[str, float] = {}
    out = (rewards or _rewards())[name](
        prompts=["p"] * n,
        completions=completions,
        benchmark=["mmlu_pro"] * n,
        item_id=[ITEM.item_id] * n,
        source=["bundled"] * n,
        intrinsic_confidence=intrinsic,
        log_metric=lambda k, v: logged.__setitem__(k, v),
        **extra,
    )
    return out, logged


def test_names_are_stable():
    rewards = _rewards()
    assert list(rewards) == [
        "format_reward",
        "correctness_reward",
        "brier_reward",
        "log_score_reward",
        "faithful_reward",
        "metacog_score",
    ]
    assert len(DEFAULT_REWARDS) == len(rewards) and set(DEFAULT_REWARDS) < set(REWARD_NAMES)
    assert set(FLOORS) == set(REWARD_NAMES)
    # each factory's own default name (TRL names metrics after it)
    assert [f().__name__ for f in (format_reward, strict_format_reward, soft_format_reward,
                                   correctness_reward, brier_reward, log_score_reward,
                                   faithful_reward, metacog_score_reward)] == [
        "format_reward", "strict_format_reward", "soft_format_reward", "correctness_reward",
        "brier_reward", "log_score_reward", "faithful_reward", "metacog_score",
    ]  # fmt: skip
    assert [f.__qualname__ for f in rewards.values()] == list(rewards)
    every = [f.__name__ for f in make_rewards(REWARD_NAMES, grader=GRADER)]
    assert len(set(every)) == len(REWARD_NAMES)  # distinct names: TRL's metrics do not collide


def test_parse_completion_plain_and_chat():
    p = parse_completion(f"{RIGHT}\nConfidence: 80\nMeta: 90")
    assert (p.confidence, p.meta) == (0.8, 0.9) and p.answer == RIGHT.strip()
    chat = parse_completion([{"role": "assistant", "content": "x\n**Confidence:** 35%"}])
    assert chat.confidence == 0.35 and math.isnan(chat.meta) and chat.answer == "x"
    assert math.isnan(parse_completion("no number here").confidence)


def test_brier_by_hand():
    out, logged = _call(
        "brier_reward",
        [
            f"{RIGHT}\nConfidence: 80",
            f"{WRONG}\nConfidence: 80",
            RIGHT,
            f"{RIGHT}\nConfidence: 0.3",
        ],
        [None] * 4,
    )
    # 1 - (0.8 - 1)^2, 1 - (0.8 - 0)^2, no confidence -> 0, 1 - (0.3 - 1)^2
    assert out == pytest.approx([0.96, 0.36, 0.0, 0.51])
    assert logged["factual/mean_confidence"] == pytest.approx((0.8 + 0.8 + 0.3) / 3)
    assert logged["factual/brier"] == pytest.approx((0.04 + 0.64 + 0.49) / 3)


def test_log_score_by_hand():
    out, _ = _call(
        "log_score_reward",
        [f"{RIGHT}\nConfidence: 80", f"{WRONG}\nConfidence: 80", f"{RIGHT}\nConfidence: 100", "x"],
        [None] * 4,
    )
    hi, lo = -0.0010005003335835344, -3.4538776394910684  # log(.999), log(.001)/2
    right = 10 * ((-0.2231435513142097 - lo) / (hi - lo) + 0.25)  # log(.8)
    wrong = 10 * ((-1.6094379124341003 - lo) / (hi - lo))  # log(.2)
    top = 10 * ((hi - lo) / (hi - lo) + 0.25)  # q clipped to .999
    assert out == pytest.approx([right, wrong, top, -30.0])
    assert out[0] == pytest.approx(11.856643627827342) and out[2] == pytest.approx(12.5)


def test_faithful_and_metacog_score_by_hand():
    comps = [
        f"{WRONG}\nConfidence: 80\nMeta: 90",  # g=.75: |.05|<=.1 -> F=1; Z = 1-(.9-1)^2
        f"{WRONG}\nConfidence: 80\nMeta: 90",  # g=.5: F=0; Z = 1-.81
        f"{RIGHT}\nConfidence: 30",  # no meta -> Z=-1; faithful 1-(.3-.5)^2
        "nothing",  # no confidence: faithful -1, F=-1 -> Z=-1
        f"{RIGHT}\nConfidence: 30\nMeta: 10",  # no intrinsic confidence: None
    ]
    intrinsic = [0.75, 0.5, 0.5, 0.5, None]
    faith, _ = _call("faithful_reward", comps, intrinsic)
    assert faith[:4] == pytest.approx([1 - 0.05**2, 1 - 0.09, 1 - 0.04, -1.0])
    assert faith[4] is None
    z, logged = _call("metacog_score", comps, intrinsic)
    assert z[:4] == pytest.approx([0.99, 0.19, -1.0, -1.0]) and z[4] is None
    assert logged["metacog/mean_Z"] == pytest.approx((0.99 + 0.19 - 2) / 4)


def test_correctness_and_format_by_hand():
    chat = [{"role": "assistant", "content": f"{RIGHT}\nConfidence: 70"}]
    comps = [f"{RIGHT}\nConfidence: 70", WRONG, [{"role": "assistant", "content": RIGHT}], chat]
    # a right answer without a readable confidence is paid 0, as the official code grades
    # tagged output only; the bare verdict on request
    assert _call("correctness_reward", comps, [None] * 4)[0] == [1.0, 0.0, 0.0, 1.0]
    bare = correctness_reward(GRADER, require_confidence=False)
    assert _call("correctness_reward", comps, [None] * 4, {"correctness_reward": bare})[0] == [
        1.0, 0.0, 1.0, 1.0]  # fmt: skip
    assert _call("format_reward", comps, [None] * 4)[0] == [1.0, 0.0, 0.0, 1.0]


def test_unscorable_and_malformed_rows():
    """No item named: None (nothing to compare with); an unknown benchmark or item, or a
    malformed id: the reward's floor, counted; an answerless completion: the floor, ungraded."""
    comps = [f"{RIGHT}\nConfidence: 50"] * 5 + ["Confidence: 50"]
    n = len(comps)
    cols = {
        "benchmark": ["mmlu_pro", "no_such_benchmark", None, "mmlu_pro", ["mmlu_pro"], "mmlu_pro"],
        "item_id": ["not-an-item", "1", None, {"id": 1}, ITEM.item_id, ITEM.item_id],
        "source": ["bundled"] * n,
    }
    rewards = _rewards()
    for name, floor in (("correctness_reward", 0.0), ("brier_reward", -1.0),
                        ("log_score_reward", -30.0)):  # fmt: skip
        logged: dict[str, float] = {}
        log = logged.__setitem__
        out = rewards[name](prompts=["p"] * n, completions=comps, log_metric=log, **cols)
        assert out == [floor, floor, None, floor, floor, floor], name
        assert FLOORS[name.removesuffix("_reward")] == floor
        if name == "correctness_reward":
            assert logged["correctness/bad_labels"] == 4.0
            assert logged["correctness/graded_rate"] == 0.0
            assert logged["correctness/accuracy"] == 0.0


_line = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda lab, num, unit: f"{lab}{num}{unit}",
        st.sampled_from(["Confidence: ", "confidence=", "**Confidence**: ", "Meta: ", "Meta "]),
        st.one_of(
            st.integers(-1000, 1000).map(str),
            st.floats(allow_nan=True, allow_infinity=True).map(str),
            st.text(max_size=6),
        ),
        st.sampled_from(["", "%", " percent", "/10", "/100", " out of 10"]),
    ),
)
_text = st.lists(_line, max_size=6).map("\n".join)
_completion = st.one_of(
    _text,
    st.lists(
        st.fixed_dictionaries(
            {"role": st.just("assistant"), "content": st.one_of(_text, st.none())}
        ),
        max_size=2,
    ),
    st.none(),
    st.integers(),
)


@settings(max_examples=300, deadline=None)
@given(line=_line)
def test_line_values_are_the_shared_parsers(line):
    """The fast path for plain ``Confidence: N`` lines reads what parse_confidence reads."""
    from metacog_tasks.parsing import parse_confidence
    from rlmf_plugin._format import _value

    want = parse_confidence(line)
    got = _value(line)
    if want.ok:
        assert got == want.confidence
    else:
        assert math.isnan(got)


def test_meta_and_confidence_need_a_word_boundary():
    p = parse_completion("Answer 3\nConfidently: 80\nMetabolism: 40")
    assert math.isnan(p.confidence)
    p = parse_completion("Answer 3\nConfidence: 80\nMetabolism 40\nMetascore: 70")
    assert (p.confidence, p.meta) == (0.8, 0.7) and p.answer == "Answer 3"


_NAN = float("nan")


@pytest.mark.parametrize(
    ("text", "answer", "confidence", "meta", "violations"),
    [
        ("B\nConfidence: 80\nMeta: 70", "B", 0.8, 0.7, ()),
        ("B\n**Confidence:** 80%\n_Meta_: 0.7\n\n", "B", 0.8, 0.7, ()),
        ("B\r\nConfidence = .8\r\n", "B", 0.8, _NAN, ()),
        ("B\nConfidence: 100%\nConfidence: 0%", "B", _NAN, _NAN, ("duplicate_confidence",)),
        ("Confidence: 50\nMeta: 100", "", 0.5, 1.0, ("no_answer",)),
        (".\nConfidence: 50\nMeta: 100", ".", 0.5, 1.0, ("no_answer",)),
        ("B", "B", _NAN, _NAN, ("no_confidence",)),
        ("B\nConfidence: high\nMeta: 70", "B", _NAN, 0.7, ("bad_confidence",)),
        ("B\nConfidence: 80 (fairly sure)", "B", 0.8, _NAN, ("bad_confidence",)),
        ("B\nConfidence: 180", "B", _NAN, _NAN, ("bad_confidence",)),
        ("B\nConfidence: \uff18\uff10", "B", 0.8, _NAN, ("bad_confidence",)),  # fullwidth 80
        ("B\nMeta: 70\nConfidence: 80", "B", 0.8, _NAN, ("misplaced_meta",)),
        ("B\nConfidence: 80\nMeta: 70\nMeta: 10", "B", 0.8, _NAN, ("duplicate_meta", "text_after")),
        ("B\nConfidence: 80\nMeta: lots", "B", 0.8, _NAN, ("bad_meta",)),
        ("B\nConfidence: 80\nActually C", "B", 0.8, _NAN, ("text_after",)),
        ("B\nMeta-analysis says so\nConfidence: 80", "B\nMeta-analysis says so", 0.8, _NAN, ()),
        ("x" * 262_145, "", _NAN, _NAN, ("too_long", "no_answer")),
    ],
)
def test_strict_format_and_what_is_read_by_hand(text, answer, confidence, meta, violations):
    p = parse_completion(text)
    assert p.answer == answer and p.violations == violations
    for got, want in ((p.confidence, confidence), (p.meta, meta)):
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)
    assert p.strict() == (not violations) and p.has_answer == ("no_answer" not in violations)


def test_the_strict_format_may_require_the_meta_line():
    p = parse_completion("B\nConfidence: 80")
    assert p.strict() and not p.strict(require_meta=True)
    assert parse_completion("B\nConfidence: 80\nMeta: 5").strict(require_meta=True)


@settings(max_examples=150, deadline=None)
@given(
    comps=st.lists(_completion, min_size=1, max_size=4),
    intrinsic=st.one_of(st.floats(allow_nan=True), st.none(), st.text(max_size=3)),
)
def test_rewards_never_raise(comps, intrinsic):
    n = len(comps)
    for name, f in _rewards().items():
        out = f(
            prompts=["p"] * n,
            completions=comps,
            benchmark=["mmlu_pro"] * n,
            item_id=[ITEM.item_id] * n,
            source=["bundled"] * n,
            intrinsic_confidence=[intrinsic] * n,
        )
        assert len(out) == n, name
        assert all(v is None or math.isfinite(v) for v in out), (name, out)


def test_one_batch_is_graded_once_by_all_the_grading_rewards():
    from rlmf_plugin._grading import ItemGrader

    grader = ItemGrader()
    calls = []
    real = grader.verdict
    grader.verdict = lambda *a: calls.append(a) or real(*a)  # type: ignore[method-assign]
    funcs = make_rewards(["correctness", "brier", "log_score"], grader=grader)
    comps = [f"{RIGHT}\nConfidence: 70", f"{WRONG}\nConfidence: 20"]
    cols = {"benchmark": ["mmlu_pro"] * 2, "item_id": [ITEM.item_id] * 2, "source": [None] * 2}
    outs = [f(prompts=["p"] * 2, completions=comps, **cols) for f in funcs]
    assert len(calls) == 2  # three rewards, one grade per completion
    assert outs[0] == [1.0, 0.0] and outs[1] == pytest.approx([1 - 0.09, 1 - 0.04])
    for i, f in enumerate(funcs):  # a new batch is graded again, by whichever reward comes first
        f(prompts=["p"] * 2, completions=[*comps], **cols)
        assert len(calls) == 4 + 2 * i  # and each reward grades through the grader it was given


def test_logged_metrics_by_hand():
    rewards = _rewards()
    comps = [f"{RIGHT}\nConfidence: 80\nMeta: 90", f"{WRONG}\nConfidence: 20", RIGHT,
             f"{RIGHT}\nConfidence: 60"]  # fmt: skip
    cols = {"benchmark": ["mmlu_pro", "mmlu_pro", "mmlu_pro", None],
            "item_id": [ITEM.item_id] * 4, "source": ["bundled"] * 4,
            "intrinsic_confidence": [0.5, None, 0.25, 0.9]}  # fmt: skip
    outs, logs = {}, {}
    for name, f in rewards.items():
        logged: dict[str, float] = {}
        outs[name] = f(prompts=["p"] * 4, completions=comps,
                       log_metric=lambda k, v, d=logged: d.__setitem__(k, v), **cols)  # fmt: skip
        logs[name] = logged
    approx = pytest.approx
    assert logs["format_reward"] == approx({
        "format/answer_rate": 1.0, "format/confidence_rate": 0.75, "format/meta_rate": 0.25,
        "format/strict_rate": 0.75,
    })  # fmt: skip
    assert outs["format_reward"] == [1.0, 1.0, 0.0, 1.0]
    # row 3: right but no confidence (paid 0); row 4: no benchmark (None)
    assert outs["correctness_reward"] == [1.0, 0.0, 0.0, None]
    assert logs["correctness_reward"] == approx({
        "correctness/accuracy": 2 / 4,  # the ungraded row counts as wrong
        "correctness/accuracy_graded": 2 / 3, "correctness/graded_rate": 0.75,
        "correctness/bad_labels": 0.0, "correctness/grader_errors": 0.0,
    })  # fmt: skip
    # Brier over the graded rows with a confidence: (.8, 1) and (.2, 0)
    assert logs["brier_reward"] == approx(
        {"factual/mean_confidence": 1.6 / 3, "factual/brier": (0.04 + 0.04) / 2}
    )
    assert outs["brier_reward"] == approx([0.96, 0.96, 0.0, None])
    scored = [v for v in outs["log_score_reward"] if v is not None]
    assert len(scored) == 3 and logs["log_score_reward"] == approx(
        {"log_score/mean": np.mean(scored)}
    )
    assert outs["faithful_reward"] == approx([0.91, None, -1.0, 0.91])
    assert logs["faithful_reward"] == approx({
        "faithful/mean_confidence": 1.6 / 3, "faithful/brier": (0.09 + 0.09) / 2,
        "faithful/bad_targets": 0.0,
    })  # fmt: skip
    # |.8 - .5| > .1: F = 0, Z = 1 - .9^2; no intrinsic: None; no confidence, no meta: -1
    assert outs["metacog_score"] == approx([0.19, None, -1.0, -1.0])
    assert logs["metacog_score"] == approx(
        {"metacog/mean_Z": (0.19 - 2) / 3, "metacog/bad_targets": 0.0}
    )


def test_make_rewards_options_and_tolerance():
    comps = [f"{RIGHT}\nConfidence: 80\nMeta: 100"] * 3
    r = _rewards(target="accuracy", tau=0.2)
    cols = {"accuracy": [0.6, 0.59, 0.8], "intrinsic_confidence": [0.0, 0.0, 0.0]}
    faith = r["faithful_reward"](prompts=["p"] * 3, completions=comps, **cols)
    assert faith == pytest.approx([1 - 0.2**2, 1 - 0.21**2, 1.0])  # the target column is used
    z = r["metacog_score"](prompts=["p"] * 3, completions=comps, **cols)
    assert z == pytest.approx([1.0, 0.0, 1.0])  # |q - g| <= tau = .2 -> F = 1, M = 1
    # the default tolerance is 0.1, inclusive (0.8 - 0.7 is 0.1 up to rounding)
    z = _rewards()["metacog_score"](prompts=["p"] * 2, completions=comps[:2],
                                    intrinsic_confidence=[0.7, 0.69])  # fmt: skip
    assert z == pytest.approx([1.0, 0.0])
    assert [f.__name__ for f in make_rewards(["faithful", "format"], grader=GRADER)] == [
        "faithful_reward", "format_reward"]  # fmt: skip
    with pytest.raises(ValueError, match=r"unknown reward\(s\) \['nope'\]; known: \['format'"):
        make_rewards(["format", "nope"])


def test_columns_of_the_wrong_length_are_an_error_and_bad_targets_the_floor():
    rewards = _rewards()
    f = rewards["faithful_reward"]
    comps = [f"{RIGHT}\nConfidence: 50"] * 3
    with pytest.raises(ValueError, match=r"faithful_reward: column 'intrinsic_confidence' has 2 "
                                         r"values for 3 completions"):  # fmt: skip
        f(prompts=["p"] * 3, completions=comps, intrinsic_confidence=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"correctness_reward: column 'item_id' has 4 values"):
        rewards["correctness_reward"](prompts=None, completions=comps, benchmark=["mmlu_pro"] * 3,
                                      item_id=[ITEM.item_id] * 4)  # fmt: skip
    with pytest.raises(ValueError, match="must be a sequence"):
        f(prompts=None, completions=comps, intrinsic_confidence="0.5")
    assert f(prompts=["p"] * 3, completions=comps) == [None] * 3  # no such column
    out = f(prompts=["p"] * 3, completions=comps, intrinsic_confidence=(0.0, 1.0, "0.25"))
    assert out == pytest.approx([0.75, 0.75, 1 - 0.25**2])  # a tuple, bounds, numeric text
    assert f(prompts=None, completions=comps, intrinsic_confidence=[None, np.nan, 0.5])[:2] == [
        None, None]  # fmt: skip
    logged: dict[str, float] = {}
    out = f(prompts=None, completions=[*comps, comps[0]],
            intrinsic_confidence=[-0.01, 1.01, "x", [0.5]],
            log_metric=lambda k, v: logged.__setitem__(k, v))  # fmt: skip
    assert out == [-10.0] * 4 and logged["faithful/bad_targets"] == 4.0  # the floor, counted
    z = rewards["metacog_score"](
        prompts=None, completions=comps, intrinsic_confidence=[True, {}, "abc"]
    )
    assert z == [-10.0] * 3


def test_factories_work_alone_with_their_defaults():
    """Each factory without a grader or options: its own grader, column and tolerance."""
    comps = [f"{RIGHT}\nConfidence: 80\nMeta: 100", f"{WRONG}\nConfidence: 80\nMeta: 100"]
    cols = {"benchmark": ["mmlu_pro"] * 2, "item_id": [ITEM.item_id] * 2,
            "intrinsic_confidence": [0.6, 0.75]}  # fmt: skip
    assert correctness_reward()(prompts=None, completions=comps, **cols) == [1.0, 0.0]
    assert brier_reward()(prompts=None, completions=comps, **cols) == pytest.approx([0.96, 0.36])
    assert faithful_reward()(prompts=None, completions=comps, **cols) == pytest.approx(
        [1 - 0.2**2, 1 - 0.05**2]
    )
    # tolerance 0.1: |.8 - .6| is out (F = 0, Z = 0), |.8 - .75| is in (F = 1, Z = 1)
    assert metacog_score_reward()(prompts=None, completions=comps, **cols) == [0.0, 1.0]


def test_metacog_score_edges():
    f = _rewards()["metacog_score"]
    comps = ["Answer 3\nConfidence: lots\nMeta: 50",  # a confidence line that does not parse
             f"{RIGHT}\nConfidence: 80\nMeta: 0"]  # fmt: skip
    z = f(prompts=None, completions=comps, intrinsic_confidence=[0.8, 0.8])
    assert z == [-1.0, 0.0]  # F = -1 for an invalid confidence; Meta 0 is a valid judgement


def test_the_batch_memo_follows_the_columns_and_the_source_is_used():
    f = _rewards()["correctness_reward"]
    comps = [f"{RIGHT}\nConfidence: 90"] * 2
    cols = {"benchmark": ["mmlu_pro"] * 2, "item_id": [ITEM.item_id] * 2, "source": [None] * 2}
    bad = {"benchmark": [None] * 2, "item_id": ["nope"] * 2, "source": ["no/such/items.jsonl"] * 2}
    # no benchmark: nothing to compare with; an unknown item: the floor; an unreadable source:
    # a failure on the grader's side (None)
    want = {"benchmark": [None] * 2, "item_id": [0.0] * 2, "source": [None] * 2}
    for name in cols:  # the same list objects, but for one column: graded again, not memoised
        assert f(prompts=None, completions=comps, **cols) == [1.0, 1.0]
        assert f(prompts=None, completions=comps, **{**cols, name: bad[name]}) == want[name], name
