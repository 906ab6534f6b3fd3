"""The simulated responder: it places prompts, answers as its latent state says, and its texts
carry the signal the analyses look for."""

from __future__ import annotations

import json
import logging
import math
import re

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from metacog_metrics.simulate import Population
from metacog_tasks.benchmarks import BENCHMARK_NAMES, PROBES, get_benchmark
from metacog_tasks.parsing import parse_confidence, parse_yes_no
from metacog_tasks.sim import (
    FALLBACK_REPLY,
    UNKNOWN_LOGLIK,
    SimResponder,
    build_index,
    preset_params,
)
from tests.availability import unavailable

MODELS = SimResponder.models(6)


def _bundled(name: str):
    try:
        bench = get_benchmark(name)
        return bench, bench.load("bundled")
    except (ImportError, ValueError) as exc:  # not landed yet in this checkout
        unavailable(f"benchmark {name} is not available: {exc}")


@pytest.fixture(scope="module")
def sims() -> dict[str, SimResponder]:
    return {m: SimResponder(m, seed=7) for m in MODELS}


# --- answers follow the latent state -----------------------------------------------------------


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_solve_answers_grade_as_the_latent_state_says(name, sims):
    bench, items = _bundled(name)
    assert items
    # SciCode grades by running code in the sandbox (~0.1 s a response): three models suffice.
    members = list(sims.items())[:3] if name == "scicode" else list(sims.items())
    n_correct = 0
    for item in items:
        for model, sim in members:
            replies = [sim.respond(p) for p in bench.solve_prompts(item)]
            grade = bench.grade_responses(item, replies)
            expected = sim.cell(name, item.item_id)["correct"]
            assert grade.correct == float(expected), (model, item.item_id, replies)
            n_correct += expected
    # Both outcomes occur, so the check above is not vacuous.
    assert 0 < n_correct < len(items) * len(members)


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_probe_replies_parse_to_the_latent_confidence(name, sims):
    bench, items = _bundled(name)
    seen = set()
    for item in items:
        for model, sim in sims.items():
            for probe in PROBES:
                reply = sim.respond(bench.probe_prompt(item, probe))
                cell = sim.cell(name, item.item_id, probe)
                if probe == "numeric":
                    parsed = parse_confidence(reply)
                    assert parsed.ok and parsed.confidence == pytest.approx(cell["numeric"] / 100)
                    assert reply.splitlines()[-1] == f"Confidence: {int(cell['numeric'])}"
                else:
                    parsed = parse_yes_no(reply)
                    assert parsed.ok, reply
                    assert parsed.confidence == float(cell["confidence"]), (model, reply)
                    assert reply.splitlines()[-1] in ("Answer: Yes", "Answer: No")
                    seen.add(cell["confidence"])
    assert seen == {True, False}


def test_responder_agrees_with_simulate_records():
    """The harness models and the record-table fast path share one latent state."""
    bench, items = _bundled("mmlu_pro")
    params = preset_params("paper")
    pop = Population(params, 5, seed=3)
    ids = [it.item_id for it in items]
    state = pop.latent("mmlu_pro", ids)
    for j, model in enumerate(pop.models):
        sim = SimResponder(model, seed=3)
        for i, item in enumerate(items):
            verdict = parse_yes_no(sim.respond(bench.probe_prompt(item))).confidence
            assert verdict == float(state.confidence[i, j])
            solved = bench.grade(item, sim.respond(bench.solve_prompt(item))).correct
            assert solved == float(state.correct[i, j])


def test_answers_are_deterministic_and_order_free():
    bench, items = _bundled("mmlu_pro")
    a = SimResponder("m04", seed=1)
    b = SimResponder("metacog-sim/m04", seed=1)
    prompts = [bench.probe_prompt(it, p) for it in items for p in PROBES]
    forward = [a.respond(p) for p in prompts]
    backward = [b.respond(p) for p in reversed(prompts)][::-1]
    assert forward == backward
    other_seed = SimResponder("m04", seed=2)
    assert [other_seed.respond(p) for p in prompts] != forward


def test_preset_and_overrides_change_the_model():
    _bench, items = _bundled("mmlu_pro")
    base = SimResponder("m02")
    strong = SimResponder("m02", overrides={"ability_mean": 5.0})
    assert sum(strong.cell("mmlu_pro", it.item_id)["correct"] for it in items) == len(items)
    assert strong.params.ability_mean == 5.0 and base.params.ability_mean != 5.0
    with pytest.raises(ValueError, match="unknown simulation preset"):
        SimResponder("m01", preset="nope")
    with pytest.raises(ValueError, match="m01, m02"):
        SimResponder("gpt-4o")


# --- robust to what the harness wraps around the prompt ----------------------------------------


def _chatml(messages):
    out = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return out + "<|im_start|>assistant\n"


def _llama3(messages):
    out = "<|begin_of_text|>"
    for m in messages:
        out += f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content']}<|eot_id|>"
    return out + "<|start_header_id|>assistant<|end_header_id|>\n\n"


def test_chat_templates_system_prompts_and_message_lists(sims):
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    bench, items = _bundled("mmlu_pro")
    sim = sims["m03"]
    system = "You are a careful assistant. Think before you answer."
    for item in items[:5]:
        for prompt in [bench.probe_prompt(item, "prospective"), bench.solve_prompt(item)]:
            plain = sim.respond(prompt)
            msgs = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
            assert sim.respond(_chatml(msgs)) == plain
            assert sim.respond(_llama3(msgs)) == plain
            assert sim.respond(f"[INST] {system}\n\n{prompt} [/INST]") == plain
            assert sim.respond(msgs) == plain
            # Re-wrapped whitespace (a template that strips or re-indents lines).
            assert sim.respond("\n".join("  " + ln for ln in prompt.splitlines())) == plain
            inspect_msgs = [
                ChatMessageSystem(content=system),
                ChatMessageUser(content=prompt),
            ]
            assert sim.respond(inspect_msgs) == plain
            # A conversation where an earlier turn was about another item.
            other = items[-1]
            convo = [
                ChatMessageUser(content=bench.probe_prompt(other)),
                ChatMessageAssistant(content="Answer: Yes"),
                ChatMessageUser(content=prompt),
            ]
            assert sim.respond(convo) == plain
    assert sim.stats.unknown == 0


def test_few_shot_examples_and_left_truncation(sims):
    bench, items = _bundled("mmlu_pro")
    sim = sims["m05"]
    target = items[3]
    shots = "\n\n".join(
        bench.solve_prompt(it) + " " + bench.reference_response(it) for it in items[:3]
    )
    fewshot = shots + "\n\n" + bench.solve_prompt(target)
    assert sim.respond(fewshot) == sim.respond(bench.solve_prompt(target))
    probe = bench.probe_prompt(target)
    assert sim.respond(probe[40:]) == sim.respond(probe)  # the start was cut off


def test_unknown_prompts_get_a_logged_fallback(sims, caplog):
    sim = SimResponder("m06", seed=7)
    with caplog.at_level(logging.WARNING, logger="metacog_tasks.sim"):
        reply = sim.respond("What is the capital of Atlantis? Answer: Yes or No")
        ll = sim.loglik("Tell me a joke.", " Yes")
        ll_other = sim.loglik("Tell me a joke.", " Knock knock")
    assert reply == FALLBACK_REPLY
    assert ll == pytest.approx(math.log(0.5)) and ll_other == UNKNOWN_LOGLIK
    assert sim.stats.unknown == 3 and sim.stats.requests == 3
    assert any("not found in the item index" in r.message for r in caplog.records)
    assert "Capital of Atlantis" in caplog.text or "capital of Atlantis" in caplog.text


def test_ambiguous_probe_texts_are_answered_and_counted(tmp_path):
    bench, items = _bundled("mmlu_pro")
    rows = [json.loads(json.dumps(dict(it.record))) for it in items[:2]]
    rows[1]["question"] = rows[0]["question"]  # same question, other options and id
    path = tmp_path / "mmlu_pro.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    sim = SimResponder("m01", sources={"mmlu_pro": str(path)}, benchmarks=["mmlu_pro"])
    loaded = get_benchmark("mmlu_pro").load(path)
    first = sim.respond(bench.probe_prompt(loaded[0]))
    assert sim.respond(bench.probe_prompt(loaded[1])) == first
    assert sim.stats.ambiguous == 2
    # Solve prompts show the options, so they stay unambiguous.
    sim.respond(bench.solve_prompt(loaded[1]))
    assert sim.stats.ambiguous == 2


def test_named_benchmarks_must_exist():
    with pytest.raises(ValueError, match="unknown benchmark"):
        build_index(["mmlu_pro", "not_a_benchmark"])


# --- log-likelihoods ---------------------------------------------------------------------------


def test_loglik_is_consistent_with_p_yes(sims):
    bench, items = _bundled("mmlu_pro")
    for sim in sims.values():
        for item in items:
            for probe in ("prospective", "counterfactual"):
                prompt = bench.probe_prompt(item, probe)
                p_yes = sim.cell("mmlu_pro", item.item_id, probe)["p_yes"]
                for yes, no in ((" Yes", " No"), ("Yes", "No")):
                    ly, ln = sim.loglik(prompt, yes), sim.loglik(prompt, no)
                    assert math.exp(ly) + math.exp(ln) == pytest.approx(1.0)
                    assert 1 / (1 + math.exp(ln - ly)) == pytest.approx(p_yes, abs=1e-6)
                    # Same verdict as the generated reply.
                    verdict = parse_yes_no(sim.respond(prompt)).confidence
                    assert (ly > ln) == (verdict == 1.0)


def test_loglik_numeric_and_solve_continuations(sims):
    bench, items = _bundled("mmlu_pro")
    sim = sims["m02"]
    item = items[0]
    numeric = sim.cell("mmlu_pro", item.item_id, "numeric")["numeric"]
    prompt = bench.probe_prompt(item, "numeric")
    scores = {n: sim.loglik(prompt, f" {n}") for n in range(0, 101, 5)}
    assert max(scores, key=scores.get) == 5 * round(numeric / 5)
    solve = bench.solve_prompt(item)
    chosen = bench.grade(item, sim.respond(solve)).extracted
    letters = "ABCDEFGHIJ"[: item.meta["n_options"]]
    lls = {c: sim.loglik(solve, f" The answer is ({c})") for c in letters}
    assert max(lls, key=lls.get) == chosen
    assert sum(v == max(lls.values()) for v in lls.values()) == 1


# --- the texts carry the signal ----------------------------------------------------------------

_HEDGE = re.compile(
    r"\b(probably|perhaps|possibly|i think|i believe|i suspect|may be|likely|not certain|unsure|"
    r"doubt|cannot|do not)\b",
    re.IGNORECASE,
)
_HARD = re.compile(r"\b(tricky|niche|hard|subtle|demanding|thorny|specialised)\b", re.I)
_EASY = re.compile(r"\b(standard|well-known|basic|familiar|routine|straightforward)\b", re.I)
_OPERATOR = re.compile(r"\d\s*[-+*/=]\s*-?\d")


def _rationale_features(text: str) -> np.ndarray:
    body = text.rsplit("\n", 1)[0]
    return np.array(
        [
            len(_HEDGE.findall(body)),
            len(_HARD.findall(body)),
            len(_EASY.findall(body)),
            len(re.findall(r"\bwait\b", body, re.I)),
            len(body.split()),
        ],
        dtype=float,
    )


def test_rationale_wording_predicts_the_models_own_confidence():
    """A plain linear score of hedges and difficulty words separates yes from no rationales.

    Within one item (so that shared difficulty cannot explain it), the wording ranks models
    by their own P(yes).
    """
    names = [n for n in BENCHMARK_NAMES if n in build_index().benchmarks]
    sims = [SimResponder(m, seed=11) for m in SimResponder.models(12)]
    scores, verdicts, within = [], [], []
    for name in names:
        bench = get_benchmark(name)
        for item in bench.load("bundled"):
            item_scores, item_p = [], []
            for sim in sims:
                f = _rationale_features(sim.respond(bench.probe_prompt(item)))
                score = f[0] + f[1] - f[2]
                scores.append(score)
                verdicts.append(sim.cell(name, item.item_id)["confidence"])
                item_scores.append(score)
                item_p.append(sim.cell(name, item.item_id)["p_yes"])
            if len(set(item_scores)) > 1:
                within.append(np.corrcoef(item_scores, item_p)[0, 1])
    auc = roc_auc_score(np.array(verdicts, dtype=int), -np.array(scores))
    assert auc > 0.85
    assert np.nanmean(within) < -0.5


def test_inline_solving_shows_derivations_only_when_it_happens():
    names = [n for n in ("mathbench", "omni_math") if n in build_index().benchmarks]
    if not names:
        unavailable("no inline benchmark (mathbench, omni_math) in this checkout")
    sims = [SimResponder(m, seed=5) for m in SimResponder.models(12)]
    n_inline = 0
    for name in names:
        bench = get_benchmark(name)
        for item in bench.load("bundled"):
            for sim in sims:
                reply = sim.respond(bench.probe_prompt(item))
                inline = sim.cell(name, item.item_id)["inline"]
                has_ops = bool(_OPERATOR.search(reply)) and "Step 1:" in reply
                assert has_ops == inline, reply
                n_inline += inline
                if inline:
                    assert sim.reasoning
    assert n_inline > 0
    # Not on a benchmark without inline solving.
    bench, items = _bundled("mmlu_pro")
    for item in items:
        for sim in sims:
            assert "Step 1:" not in sim.respond(bench.probe_prompt(item))


# --- both harnesses log the same latent state ----------------------------------------------------


@pytest.mark.slow
def test_lmeval_and_inspect_runs_log_the_population_latent_state(tmp_path, monkeypatch):
    """The real harnesses, driven by the simulated models, log exactly the latent state."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from metacog_tasks.collect.inspect_logs import read_inspect_logs
    from metacog_tasks.collect.lmeval import read_lmeval
    from metacog_tasks.inspect_tasks import mathbench, mmlu_pro
    from metacog_tasks.lmeval import run_lmeval

    members = ["m01", "m04"]  # m04 is a reasoning model (inline solving on MathBench)
    runs = run_lmeval(
        [{"model": "metacog-sim", "model_args": f"model={m},preset=paper,seed=0"} for m in members],
        ["metacog_mmlu_pro", "metacog_mathbench"],
        output_path=tmp_path / "lm",
        metadata={"metacog_data": "bundled"},
        apply_chat_template=True,
        system_instruction="Answer carefully.",
    )
    lm = read_lmeval([p for r in runs for p in (r.results_path, *r.samples_paths)]).records
    logs = inspect_eval(
        [mmlu_pro(data="bundled"), mathbench(data="bundled")],
        model=[get_model(f"metacog-sim/{m}", preset="paper", seed=0) for m in members],
        display="none",
        log_dir=str(tmp_path / "inspect"),
    )
    ins = read_inspect_logs([log.location for log in logs]).records

    pop = Population(preset_params("paper"), 4, seed=0)
    for records in (lm, ins):
        verbal = records[records["confidence_kind"] == "verbal_binary"]
        assert set(verbal["benchmark"]) == {"mmlu_pro", "mathbench"}
        assert verbal["confidence"].notna().all()
        for (bench, model), rows in verbal.groupby(["benchmark", "model"]):
            member = str(model).rsplit("/", 1)[-1]
            state = pop.latent(bench, list(rows["item_id"]), models=[member])
            np.testing.assert_array_equal(rows["correct"], state.correct[:, 0].astype(float))
            np.testing.assert_array_equal(rows["confidence"], state.confidence[:, 0].astype(float))
    key = ["model", "benchmark", "item_id", "probe"]
    a = lm[lm["confidence_kind"] == "verbal_binary"].set_index(key).sort_index()
    b = ins[ins["confidence_kind"] == "verbal_binary"].set_index(key).sort_index()
    assert a.index.equals(b.index)
    np.testing.assert_array_equal(a["confidence"], b["confidence"])
    np.testing.assert_array_equal(a["correct"], b["correct"])


def test_rationale_words_come_from_the_benchmark_record() -> None:
    from metacog_tasks.benchmarks import Item, benchmark_class
    from metacog_tasks.sim import probe_reply, topic_of
    from metacog_tasks.sim._wording import wording_of

    law = Item("mmlu_pro", "1", "Q?", "A", "mc", meta={"category": "civil_law"})
    assert topic_of(law) == "civil law"  # the record's "{category}"
    assert topic_of(Item("legalbench", "1", "Q?", "A", "x")) == "legal"
    assert topic_of(Item("unregistered", "1", "Q?", "A", "x", meta={"subject": "chem"})) == "chem"
    assert topic_of(Item("unregistered", "1", "Q?", "A", "x")) == "general"
    assert wording_of(Item("unregistered", "1", "Q?", "A", "x")).sketch is None
    # a reasoning model always says what the item hinges on; an inline solver of a coding
    # step sketches the loop first
    reply = probe_reply(
        law, yes=True, uncertainty=0.1, rng=np.random.default_rng(0), reasoning=True
    )
    assert benchmark_class("mmlu_pro").wording.crux in reply
    step = Item("scicode", "1.1", "Implement 2 steps of size 3", "", "code")
    reply = probe_reply(step, yes=True, uncertainty=0.1, rng=np.random.default_rng(0), inline=True)
    assert benchmark_class("scicode").wording.sketch in reply
    plain = Item("omni_math", "1", "Find 2 + 3", "5", "x")
    reply = probe_reply(plain, yes=True, uncertainty=0.1, rng=np.random.default_rng(0), inline=True)
    assert "Sketch:" not in reply and "Step 1:" in reply
