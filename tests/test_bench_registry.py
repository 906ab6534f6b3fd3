"""The benchmark registry, prompt overrides and the offline error of every loader."""

from __future__ import annotations

import inspect
import json
import math
import sys
import types
import warnings
from pathlib import Path

import pytest

from metacog_tasks.benchmarks import (
    BENCHMARK_NAMES,
    PROBE_TEMPLATES,
    PROBES,
    Benchmark,
    DataFormatError,
    DataUnavailableError,
    Grade,
    Item,
    PromptError,
    UnknownBenchmarkError,
    benchmark_class,
    get_benchmark,
)
from metacog_tasks.benchmarks import _data as data_mod
from metacog_tasks.benchmarks._common import TemplatedBenchmark, stable_hash
from metacog_tasks.benchmarks._data import (
    load_hf,
    pack_dir,
    read_records,
    require_fields,
)
from metacog_tasks.benchmarks._prompts import (
    PromptSet,
    load_prompt_overrides,
    probe_fields,
)

#: Grows as benchmarks land.
IMPLEMENTED = BENCHMARK_NAMES


def test_names() -> None:
    assert BENCHMARK_NAMES == (
        "squad",
        "mmlu_pro",
        "legalbench",
        "mathbench",
        "omni_math",
        "scicode",
    )


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownBenchmarkError) as err:
        get_benchmark("gsm8k")
    assert isinstance(err.value, ValueError)
    for name in BENCHMARK_NAMES:
        assert name in str(err.value)


def test_dash_alias() -> None:
    assert get_benchmark("mmlu-pro").name == "mmlu_pro"


def test_prompt_override_from_mapping_and_files(tmp_path: Path) -> None:
    custom = "Q: {question}\n{options}\nReply with the letter."
    bench = get_benchmark("mmlu_pro", prompts={"solve": custom})
    item = bench.load("bundled")[0]
    assert bench.solve_prompt(item).startswith("Q: " + item.question)
    yaml_file = tmp_path / "p.yaml"
    yaml_file.write_text("prospective: 'Will you get this right? {question}'\n")
    bench = get_benchmark("mmlu_pro", prompts=yaml_file)
    assert bench.probe_prompt(item) == f"Will you get this right? {item.question}"
    json_file = tmp_path / "p.json"
    json_file.write_text(json.dumps({"numeric": "0-100? {question}"}))
    bench = get_benchmark("mmlu_pro", prompts=str(json_file))
    assert bench.probe_prompt(item, "numeric") == f"0-100? {item.question}"


def test_prompt_override_errors(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="unknown prompt template"):
        get_benchmark("mmlu_pro", prompts={"solv": "x"})
    with pytest.raises(PromptError, match="unknown field"):
        get_benchmark("mmlu_pro", prompts={"prospective": "{question} {options}"})
    with pytest.raises(PromptError, match="cannot read"):
        get_benchmark("mmlu_pro", prompts=tmp_path / "missing.yaml")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(PromptError, match="mapping"):
        get_benchmark("mmlu_pro", prompts=bad)


@pytest.mark.parametrize("name", IMPLEMENTED)
def test_every_benchmark_loads_its_pack_and_builds_prompts(name: str) -> None:
    bench = get_benchmark(name)
    assert isinstance(bench, Benchmark)
    items = bench.load("bundled")
    assert 8 <= len(items) <= 40
    assert len({it.item_id for it in items}) == len(items)
    for item in items:
        assert item.benchmark == name
        assert item.question.strip()
        for prompt in bench.solve_prompts(item):
            assert prompt.strip()
        for probe in PROBES:
            text = bench.probe_prompt(item, probe)
            assert item.question.strip()[:40] in text
    assert len(bench.load("bundled", limit=3)) == 3
    with pytest.raises(ValueError, match="unknown probe"):
        bench.probe_prompt(items[0], "retrospective")


@pytest.mark.parametrize("name", IMPLEMENTED)
def test_missing_local_path_is_a_clear_error(name: str, tmp_path: Path) -> None:
    with pytest.raises(DataUnavailableError, match="not found"):
        get_benchmark(name).load(tmp_path / "nowhere")


@pytest.mark.parametrize("name", [n for n in IMPLEMENTED if n != "mathbench"])
def test_offline_hub_load_says_how_to_use_local_files(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf" / "datasets")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    bench = get_benchmark(name, **({"tasks": ["abercrombie"]} if name == "legalbench" else {}))
    with pytest.raises(DataUnavailableError) as err:
        bench.load(None)
    message = str(err.value)
    assert "load(PATH)" in message and "bundled" in message


# --------------------------------------------------------------------------------------------
# The registry's rules one by one (names, errors, the loader dispatch, the readers, the
# template checks), on a toy benchmark and hand-written files; expected values by hand.


class Toy(TemplatedBenchmark):
    """A benchmark whose loaders return items named by the test."""

    name = "toy"
    task_noun = "riddle"
    default_split = "dev"
    PROMPTS = types.MappingProxyType({"solve": "Solve: {question}"})
    PROMPT_FIELDS = types.MappingProxyType({"solve": frozenset({"question"})})

    def __init__(self, ids=("a", "b", "c"), **kwargs) -> None:
        self.ids = list(ids)
        self.calls: list[tuple] = []
        super().__init__(**kwargs)

    def _items(self) -> list[Item]:
        return [Item("toy", i, f"What is {i}?", i, "plain") for i in self.ids]

    def _load_hub(self, split):
        self.calls.append(("hub", split))
        return self._items()

    def _load_local(self, path, split):
        self.calls.append(("local", path, split))
        return self._items()

    def solve_prompt(self, item):
        return self.prompts.render("solve", question=item.question)

    def grade(self, item, response):
        return Grade(float(response == item.target), extracted=response)

    def reference_response(self, item, prompt_index=0):
        self._check_prompt_index(item, prompt_index)
        return str(item.target)

    def wrong_response(self, item, rng, prompt_index=0):
        return "?"


def test_registry_maps_each_name_to_its_class() -> None:
    expected = {
        "squad": ("metacog_tasks.benchmarks.squad", "SQuAD"),
        "mmlu_pro": ("metacog_tasks.benchmarks.mmlu_pro", "MMLUPro"),
        "legalbench": ("metacog_tasks.benchmarks.legalbench", "LegalBench"),
        "mathbench": ("metacog_tasks.benchmarks.mathbench", "MathBench"),
        "omni_math": ("metacog_tasks.benchmarks.omni_math", "OmniMath"),
        "scicode": ("metacog_tasks.benchmarks.scicode", "SciCode"),
    }
    for name, (module, cls) in expected.items():
        got = benchmark_class(name)
        assert (got.__module__, got.__name__) == (module, cls)
        assert got.name == name
    assert benchmark_class("  MMLU-Pro ").__name__ == "MMLUPro"
    assert benchmark_class("Omni-Math").__name__ == "OmniMath"


def test_unknown_name_message_and_types() -> None:
    with pytest.raises(UnknownBenchmarkError) as err:
        benchmark_class("gsm-8k")
    assert str(err.value) == (
        "unknown benchmark 'gsm-8k'; known: squad, mmlu_pro, legalbench, mathbench, "
        "omni_math, scicode"
    )
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)
    assert str(UnknownBenchmarkError()) == ""
    assert str(UnknownBenchmarkError("plain", "second")) == "plain"
    with pytest.raises(TypeError):
        get_benchmark("squad", no_such_option=1)
    assert get_benchmark("squad", open_book=False).open_book is False


def test_stable_hash_by_hand() -> None:
    # printf 'a\x1fb' | sha256sum
    digest = "f04cdced9736a69da6103f08a4daaf8c485dd481217d218a1b4993c8c3968e13"
    assert stable_hash("a", "b") == digest[:16]
    assert stable_hash("a", "b", length=5) == digest[:5]
    assert stable_hash("a", "b", length=64) == digest
    assert (
        stable_hash("x") == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"[:16]
    )
    # printf 'é' | sha256sum: the parts are encoded as UTF-8
    assert (
        stable_hash("é") == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"[:16]
    )


def test_load_dispatch_limits_and_duplicates(tmp_path: Path) -> None:
    toy = Toy()
    assert [it.item_id for it in toy.load()] == ["a", "b", "c"]
    assert toy.calls == [("hub", "dev")]
    toy.load(split="test")
    assert toy.calls[-1] == ("hub", "test")
    assert toy.load(str(tmp_path))[0].item_id == "a"
    assert toy.calls[-1] == ("local", tmp_path, None)
    toy.load(tmp_path, split="s")
    assert toy.calls[-1] == ("local", tmp_path, "s")
    with pytest.raises(PromptError, match=r"^toy: unknown prompt template\(s\) \['x'\]"):
        Toy(prompts={"x": "y"})
    assert [it.item_id for it in toy.load(limit=2)] == ["a", "b"]
    assert toy.load(limit=0) == []
    assert len(toy.load(limit=5)) == 3
    with pytest.raises(ValueError, match=r"^toy: limit must be >= 0, got -1$"):
        toy.load(limit=-1)
    with pytest.raises(DataUnavailableError) as err:
        toy.load(tmp_path / "nowhere")
    assert str(err.value) == f"toy: data path not found: {tmp_path / 'nowhere'}"
    dup = Toy(ids=("a", "b", "c", "b", "a"))
    with pytest.raises(ValueError) as err:
        dup.load()
    assert str(err.value) == "toy: duplicate item_id 'b' in the Hub"
    with pytest.raises(ValueError, match=rf"^toy: duplicate item_id 'b' in {tmp_path}$"):
        dup.load(tmp_path)


def test_bundled_source_is_the_pack_folder() -> None:
    class Pack(Toy):
        name = "squad"

    bench = Pack()
    bench.load("bundled")
    bench.load("bundled", split="x")
    assert bench.calls == [("local", pack_dir("squad"), None), ("local", pack_dir("squad"), "x")]
    with pytest.raises(DataUnavailableError, match=r"^toy: bundled pack not found at "):
        Toy().load("bundled")


def test_probe_prompts_and_prompt_index() -> None:
    toy = Toy()
    item = toy.load()[0]
    assert toy.probe_prompt(item) == PROBE_TEMPLATES["prospective"].format(
        task="riddle", question="What is a?"
    )
    assert toy.probe_prompt(item, "numeric").startswith(
        "You will be asked to solve the following riddle later.\n\nWhat is a?\n\n"
    )
    with pytest.raises(ValueError) as err:
        toy.probe_prompt(item, "retro")
    assert str(err.value) == (
        "toy: unknown probe 'retro'; known: ['prospective', 'counterfactual', 'numeric']"
    )
    assert toy.reference_response(item, 0) == "a"
    for bad in (-1, 1):
        with pytest.raises(ValueError) as err:
            toy.reference_response(item, bad)
        assert str(err.value) == (
            f"toy item a: prompt_index {bad} out of range (the item has 1 solve prompt(s))"
        )
    rec = Item("toy", "z", "q", None, "k", record={"k": 1})
    copy = TemplatedBenchmark._record(rec)
    assert copy == {"k": 1} and type(copy) is dict
    assert toy.prompts.keys() == ["prospective", "counterfactual", "numeric", "solve"]


def test_base_contract_defaults() -> None:
    toy = Toy()
    item = toy.load()[0]
    assert toy.solve_prompts(item) == ["Solve: What is a?"]
    assert toy.grade_responses(item, ["a"]).correct == 1.0
    assert toy.grade_responses(item, ["b"]).correct == 0.0
    for responses in ([], ["a", "a"]):
        with pytest.raises(ValueError) as err:
            toy.grade_responses(item, responses)
        assert str(err.value) == f"toy item a: expected 1 solve response, got {len(responses)}"
    grades = [Grade(1.0), Grade(0.0), Grade(math.nan), Grade(1.0)]
    # the ungraded item counts wrong in the headline; the graded-only figure beside it
    assert toy.aggregate([item] * 4, grades) == {
        "accuracy": 2 / 4,
        "accuracy_graded": 2 / 3,
        "ungraded": 1.0,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Mean of empty slice" when nothing is graded
        assert math.isnan(toy.aggregate([item], [Grade(math.nan)])["accuracy_graded"])
    assert Grade(0.0).graded and not Grade(math.nan).graded
    g = Grade(1.0)
    assert (g.status, g.extracted, g.score, dict(g.details)) == ("ok", None, None, {})
    assert Item("b", "i", "q", None, "k").record == {} and Item("b", "i", "q", None, "k").meta == {}
    assert type(toy.aggregate([item], [Grade(1.0)])["accuracy"]) is float


# ----------------------------------------------------------------------- readers
def test_pack_dir(tmp_path: Path) -> None:
    path = pack_dir("squad")
    assert path.is_dir() and path.name == "squad" and path.parent.name == "packs"
    with pytest.raises(
        DataUnavailableError, match=r"^nope: bundled pack not found at .*packs/nope$"
    ):
        pack_dir("nope")


def test_read_jsonl_rules(tmp_path: Path) -> None:
    path = tmp_path / "a.JSONL"
    path.write_text('{"x": 1}\n\n   \n{"x": 2}\n', encoding="utf-8")
    assert read_records(path) == [{"x": 1}, {"x": 2}]
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"x": 1}\n\n{oops\n', encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        read_records(bad)
    assert (
        str(err.value)
        == f"{bad}, line 3: invalid JSON (Expecting property name enclosed in double quotes)"
    )
    bad.write_text('{"x": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        read_records(bad)
    assert str(err.value) == f"{bad}, line 2: expected a JSON object"
    utf = tmp_path / "c.jsonl"
    utf.write_bytes('{"q": "é"}\n'.encode())
    assert read_records(utf) == [{"q": "é"}]


def test_read_json_rules(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('[{"x": 1}, {"x": "é"}]', encoding="utf-8")
    assert read_records(path) == [{"x": 1}, {"x": "é"}]
    path.write_text('{"x": 1}', encoding="utf-8")
    assert read_records(path) == [{"x": 1}]
    path.write_text('[{"x": 1}, 2, 3]', encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        read_records(path)
    assert str(err.value) == f"{path}: item 1 is not a JSON object"
    path.write_text("3", encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        read_records(path)
    assert str(err.value) == f"{path}: expected a JSON list of objects or a JSONL file"
    path.write_text('{"x": 1}\n\n{', encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        read_records(path)
    assert str(err.value) == f"{path}: invalid JSON (Extra data, line 3)"
    with pytest.raises(DataUnavailableError) as err:
        read_records(tmp_path / "none.json")
    assert str(err.value) == f"data path not found: {tmp_path / 'none.json'}"


def test_read_folder_rules(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.jsonl").write_text('{"x": 2}\n')
    (tmp_path / "a.json").write_text('[{"x": 1}, {"x": 0, "__file__": "kept"}]')
    (tmp_path / "sub" / "c.jsonl").write_text('{"x": 3}\n')
    (tmp_path / "notes.txt").write_text("not data")
    (tmp_path / "dir.json").mkdir()  # a folder matching the pattern is not a file
    rows = read_records(tmp_path)
    assert rows == [
        {"x": 1, "__file__": "a.json"},
        {"x": 0, "__file__": "kept"},
        {"x": 2, "__file__": "b.jsonl"},
        {"x": 3, "__file__": "sub/c.jsonl"},
    ]
    assert read_records(tmp_path, pattern="*.jsonl") == [
        {"x": 2, "__file__": "b.jsonl"},
        {"x": 3, "__file__": "sub/c.jsonl"},
    ]
    with pytest.raises(DataUnavailableError) as err:
        read_records(tmp_path, pattern="*.parquet")
    assert str(err.value) == f"no *.parquet files under {tmp_path}"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataUnavailableError, match=r"^no \*\.json\* files under "):
        read_records(empty)


def test_require_fields_message() -> None:
    require_fields({"a": 1, "b": 2}, ["a", "b"], benchmark="x", where="w")
    with pytest.raises(DataFormatError) as err:
        require_fields({"z": 1, "a": 1}, ["a", "c", "b"], benchmark="bench", where="file row 4")
    assert str(err.value) == "bench: file row 4 lacks field(s) ['c', 'b'] (has ['a', 'z'])"


def _fake_datasets(monkeypatch, load_dataset) -> None:
    module = types.ModuleType("datasets")
    module.load_dataset = load_dataset  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", module)


def test_load_hf_rows_and_call(monkeypatch) -> None:
    calls = []

    def load_dataset(path, name, **kwargs):
        calls.append((path, name, kwargs))
        return [{"q": 1, "a": 2}, {"q": 3}]

    _fake_datasets(monkeypatch, load_dataset)
    rows = load_hf("bench", "org/ds", name="cfg", split="test", fields=("q", "a"), revision="r1")
    assert rows == [{"q": 1, "a": 2}, {"q": 3}]  # only the first row is checked
    assert calls == [("org/ds", "cfg", {"split": "test", "revision": "r1"})]
    assert load_hf("bench", "org/ds", split="dev") == rows
    assert calls[-1] == ("org/ds", None, {"split": "dev"})
    with pytest.raises(DataFormatError) as err:
        load_hf("bench", "org/ds", name="cfg", split="test", fields=("a", "z"))
    assert str(err.value) == (
        "bench: org/ds (config 'cfg'), split 'test' row 0 lacks field(s) ['z'] (has ['a', 'q'])"
    )
    with pytest.raises(DataFormatError, match=r"^bench: org/ds, split 'x' row 0 lacks"):
        load_hf("bench", "org/ds", split="x", fields=("z",))
    _fake_datasets(monkeypatch, lambda *a, **k: [])
    assert load_hf("bench", "org/ds", split="x", fields=("z",)) == []


def test_load_hf_offline_message(monkeypatch) -> None:
    def fail(path, name, **kwargs):
        raise ConnectionError("no network\nsecond line")

    _fake_datasets(monkeypatch, fail)
    with pytest.raises(DataUnavailableError) as err:
        load_hf("bench", "org/ds", name="c", split="test", local_hint="my files")
    assert str(err.value) == (
        "bench: cannot load the Hugging Face dataset org/ds (config 'c'), split 'test': "
        "ConnectionError: no network\n"
        "Offline? Pass local files instead: get_benchmark('bench').load(PATH) with "
        "PATH = my files; or load('bundled') for the mini pack; or pre-populate the Hugging "
        "Face cache and set HF_DATASETS_OFFLINE=1."
    )
    assert isinstance(err.value.__cause__, ConnectionError)

    def silent(path, name, **kwargs):
        raise RuntimeError()

    _fake_datasets(monkeypatch, silent)
    with pytest.raises(DataUnavailableError) as err:
        load_hf("bench", "org/ds", split="test")
    assert str(err.value).startswith(
        "bench: cannot load the Hugging Face dataset org/ds, split 'test': RuntimeError: \n"
        "Offline? Pass local files instead: get_benchmark('bench').load(PATH) with PATH = a "
        "local JSON/JSONL file or folder in the dataset's field names; or"
    )
    assert data_mod.DataUnavailableError is DataUnavailableError


# ----------------------------------------------------------------------- templates
def test_prompt_overrides_reading(tmp_path: Path) -> None:
    assert load_prompt_overrides(None) == {}
    src = {"a": "x"}
    got = load_prompt_overrides(src)
    assert got == {"a": "x"} and got is not src
    assert load_prompt_overrides({1: "x"}) == {"1": "x"}
    with pytest.raises(PromptError) as err:
        load_prompt_overrides({"a": "x", "b": 3})
    assert str(err.value) == "prompts mapping: template 'b' is not a string"
    # read as JSON, not YAML: JSON joins an escaped surrogate pair (as json.dump writes any
    # character beyond the BMP) into one character, YAML keeps two surrogates
    upper = tmp_path / "p.JSON"
    upper.write_text('{"solve": "\\ud83d\\ude00 {question}"}', encoding="utf-8")
    assert load_prompt_overrides(upper) == {"solve": "\U0001f600 {question}"}
    yml = tmp_path / "p.yml"
    yml.write_text("solve: 'é {question}'\n", encoding="utf-8")
    assert load_prompt_overrides(str(yml)) == {"solve": "é {question}"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n", encoding="utf-8")
    with pytest.raises(PromptError, match=rf"^cannot parse prompt file {bad}: "):
        load_prompt_overrides(bad)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{", encoding="utf-8")
    with pytest.raises(PromptError, match=rf"^cannot parse prompt file {bad_json}: "):
        load_prompt_overrides(bad_json)
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n", encoding="utf-8")
    with pytest.raises(PromptError) as err:
        load_prompt_overrides(listed)
    assert str(err.value) == f"{listed}: expected a mapping of template name to text"
    with pytest.raises(PromptError, match=rf"^cannot read prompt file {tmp_path / 'no.yaml'}: "):
        load_prompt_overrides(tmp_path / "no.yaml")


def test_prompt_set_rules() -> None:
    templates = {"solve": "Q: {question}", "probe": "{task}: {question}"}
    fields = {"solve": {"question"}, "probe": frozenset({"task", "question"})}
    ps = PromptSet("b", templates, fields, {"solve": "{question.upper} {question[0]}!"})
    assert ps["solve"] == "{question.upper} {question[0]}!"
    assert ps.keys() == ["solve", "probe"]
    assert ps.as_dict() == {
        "solve": "{question.upper} {question[0]}!",
        "probe": "{task}: {question}",
    }
    ps.as_dict()["solve"] = "changed"
    assert ps["solve"] != "changed"
    assert ps.render("probe", task="T", question="Q") == "T: Q"
    assert templates["solve"] == "Q: {question}"  # the defaults are not changed
    with pytest.raises(PromptError) as err:
        PromptSet("b", templates, fields, {"zeta": "x", "alpha": "y"})
    assert str(err.value) == (
        "b: unknown prompt template(s) ['alpha', 'zeta']; known: ['probe', 'solve']"
    )
    with pytest.raises(PromptError) as err:
        PromptSet("b", templates, fields, {"solve": "{zz} {question} {aa.b}"})
    assert str(err.value) == (
        "b: template 'solve' uses unknown field(s) ['aa', 'zz']; allowed: ['question']"
    )
    with pytest.raises(PromptError, match=r"^b: template 'solve' is malformed: "):
        PromptSet("b", templates, fields, {"solve": "{question"})
    # a template without declared fields may use none; the defaults are checked too
    with pytest.raises(PromptError, match=r"template 'free' uses unknown field\(s\) \['x'\]"):
        PromptSet("b", {"free": "{x}"}, {})
    assert PromptSet("b", {"free": "no fields {{x}}"}, {}).render("free") == "no fields {x}"
    assert probe_fields() == {
        "prospective": frozenset({"task", "question"}),
        "counterfactual": frozenset({"task", "question"}),
        "numeric": frozenset({"task", "question"}),
    }


def test_load_hf_without_the_datasets_package(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # "import datasets" raises ImportError
    with pytest.raises(DataUnavailableError) as err:
        load_hf("bench", "org/ds", split="test")
    assert str(err.value) == "bench: the datasets package is not installed"
    assert isinstance(err.value.__cause__, ImportError)


# --------------------------------------------------------------------------------------------
# The benchmark record: one module per benchmark, found by the registry, carrying everything
# the harness tasks, the simulator and the RLMF exports know about it.


def test_every_record_is_complete_and_consistent() -> None:
    from metacog_metrics import BenchmarkProfile
    from metacog_tasks.benchmarks import SimWording, TaskOption, benchmark_classes

    classes = benchmark_classes()
    assert tuple(cls.name for cls in classes) == BENCHMARK_NAMES
    assert [cls.order for cls in classes] == sorted({cls.order for cls in classes})
    for cls in classes:
        assert cls.__module__ == f"metacog_tasks.benchmarks.{cls.name}"
        assert cls.title and cls.summary and "/" in cls.dataset
        assert isinstance(cls.simulation, BenchmarkProfile)
        assert isinstance(cls.wording, SimWording) and cls.wording.topic and cls.wording.crux
        assert cls.rlmf_family in {"math", "code", "qa", "knowledge", "legal"}
        assert cls.task_modes[0] == "step" and cls.solve_max_tokens > 0
        keywords = set(inspect.signature(cls.__init__).parameters)
        for option in cls.task_options:
            assert isinstance(option, TaskOption) and option.name in keywords, (cls, option)
        assert data_mod.pack_dir(cls.name).is_dir()  # its bundled pack


def test_the_records_hold_the_designed_simulation_profiles() -> None:
    from metacog_tasks.benchmarks import simulation_profiles

    # (difficulty mean, difficulty sd, legibility, confidence shift, inline), as designed: the
    # math benchmarks allow inline solving, omni_math and scicode are hard and read as such
    want = {
        "squad": (0.0, 1.5, 1.0, 0.0, False),
        "mmlu_pro": (0.2, 1.5, 1.0, 0.0, False),
        "legalbench": (-0.4, 1.4, 0.8, 0.0, False),
        "mathbench": (0.0, 1.5, 1.0, 0.1, True),
        "omni_math": (1.4, 1.5, 1.0, -0.4, True),
        "scicode": (1.8, 1.2, 0.8, -0.5, False),
    }
    got = {
        name: (p.difficulty_mean, p.difficulty_sd, p.legibility, p.confidence_shift, p.inline)
        for name, p in simulation_profiles().items()
    }
    assert list(got) == list(want) and got == want


def test_rlmf_families_and_answer_equivalence() -> None:
    from metacog_tasks.benchmarks import rlmf_family

    families = {name: rlmf_family(name) for name in BENCHMARK_NAMES}
    assert families == {
        "squad": "qa",
        "mmlu_pro": "knowledge",
        "legalbench": "legal",
        "mathbench": "math",
        "omni_math": "math",
        "scicode": "code",
    }
    assert rlmf_family("not_registered") == "not_registered"
    assert Benchmark.same_answer("The Eiffel Tower.", "eiffel tower")
    assert not Benchmark.same_answer("1/2", "0.5")
    assert benchmark_class("omni_math").same_answer("\\frac{1}{2}", "0.5")
    assert benchmark_class("mathbench").same_answer("\\sqrt{8}", "2\\sqrt{2}")
    assert not benchmark_class("squad").same_answer("\\frac{1}{2}", "0.5")
    assert not benchmark_class("omni_math").same_answer("3", "4")


def test_task_option_annotation_and_conversion() -> None:
    from metacog_tasks.benchmarks import TaskOption

    flag = TaskOption("open_book", bool, "Show the passage.")
    assert flag.annotation == (bool | None) and flag.convert(True) is True
    assert flag.convert("a,b") == "a,b"  # not a name list: as given
    names = TaskOption("tasks", str, "Task names.", names=True)
    assert names.annotation == (str | list[str] | None)
    assert names.convert("proa, hearsay,") == ["proa", "hearsay"]
    assert names.convert(["a,b", "c"]) == ["a", "b", "c"]
    assert names.convert(None) is None


_NEW_BENCHMARK = """
import numpy as np
from metacog_metrics import BenchmarkProfile
from metacog_tasks.benchmarks.base import Benchmark, Grade, SimWording


class Trivia(Benchmark):
    name = "trivia_new"
    title = "Trivia"
    summary = "one-line questions"
    dataset = "example/trivia"
    order = 99
    simulation = BenchmarkProfile(difficulty_sd=0.5)
    wording = SimWording("trivia")
    rlmf_family = "qa"

    def load(self, source=None, *, split=None, limit=None):
        return []

    def solve_prompt(self, item):
        return item.question

    def probe_prompt(self, item, probe="prospective"):
        return item.question

    def grade(self, item, response):
        return Grade(1.0)

    def reference_response(self, item, prompt_index=0):
        return ""

    def wrong_response(self, item, rng, prompt_index=0):
        return ""
"""


@pytest.fixture
def benchmarks_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder added to the benchmarks package, and a registry that scans again."""
    import metacog_tasks.benchmarks as package
    from metacog_tasks.benchmarks import _registry

    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    monkeypatch.setattr(_registry, "_found", None)
    monkeypatch.setattr(_registry, "_broken", {})
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("metacog_tasks.benchmarks.trivia_")]:
        del sys.modules[name]


def test_a_new_benchmark_is_one_module(benchmarks_path: Path) -> None:
    from metacog_tasks.benchmarks import rlmf_family, simulation_profiles

    (benchmarks_path / "trivia_new.py").write_text(_NEW_BENCHMARK)
    (benchmarks_path / "trivia_helpers.py").write_text("HELPER = 1\n")  # not a benchmark
    from metacog_tasks import benchmarks

    names = benchmarks.BENCHMARK_NAMES
    assert names == (*IMPLEMENTED, "trivia_new")
    assert benchmark_class("Trivia-New").title == "Trivia"
    assert simulation_profiles()["trivia_new"].difficulty_sd == 0.5
    assert rlmf_family("trivia_new") == "qa"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('    rlmf_family = "qa"\n', ""), r"record attribute\(s\) \['rlmf_family'\] unset"),
        (('name = "trivia_new"', 'name = "trivia"'), "must be the module's, 'trivia_new'"),
        (("order = 99", "order = 1"), r"benchmarks share an order: \[1, 1, 2, 3, 4, 5, 6\]"),
        (("", "\n\nclass Other(Trivia):\n    pass\n"), "defines one Benchmark subclass, found"),
    ],
)
def test_a_bad_benchmark_module_is_named(benchmarks_path: Path, edit, message) -> None:
    old, new = edit
    text = _NEW_BENCHMARK.replace(old, new) if old else _NEW_BENCHMARK + new
    (benchmarks_path / "trivia_new.py").write_text(text)
    with pytest.raises(TypeError, match=message):
        benchmark_class("squad")


def test_a_benchmark_that_cannot_be_imported_is_named_on_lookup(benchmarks_path: Path) -> None:
    (benchmarks_path / "trivia_new.py").write_text("import no_such_dependency_xyz\n")
    from metacog_tasks import benchmarks

    names = benchmarks.BENCHMARK_NAMES
    assert names == IMPLEMENTED
    with pytest.raises(ImportError, match="benchmark 'trivia_new' cannot be imported here"):
        benchmark_class("trivia_new")
    with pytest.raises(UnknownBenchmarkError):
        benchmark_class("trivia_old")


def _documented_modules() -> list[str]:
    import pkgutil

    import metacog_tasks.benchmarks as package

    names = [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    others = ["metacog_tasks.sim.presets", "metacog_tasks.lmeval.configs", "metacog_tasks.parsing"]
    return [package.__name__, *names, *others]


@pytest.mark.parametrize("module", _documented_modules())
def test_docstring_examples_run_offline_on_the_bundled_packs(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), verbose=False, report=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {module} failed"
    public = {"metacog_tasks.benchmarks", "metacog_tasks.benchmarks.base"}
    assert result.attempted > 0 or module not in public  # the public API shows its use


def _code_text(path: Path) -> str:
    """Identifiers and string literals of a Python file, without comments and docstrings."""
    import ast
    import io
    import tokenize

    source = path.read_text(encoding="utf-8")
    docs: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    kept = (tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING))
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return " ".join(t.string for t in tokens if t.type in kept and t.start[0] not in docs)


def test_no_source_file_names_a_benchmark_outside_its_record() -> None:
    """Only a benchmark's module (and its support module and pack) names it; the task configs
    generated from the records (``python -m metacog_tasks.lmeval.configs``) are the one
    exception. Code-running and multi-step support is chosen by the record's attributes."""
    import re

    from metacog_tasks.lmeval.configs import render_configs

    repo = Path(__file__).resolve().parents[1]
    texts = {
        path.relative_to(repo).as_posix(): _code_text(path)
        for package in ("metacog_metrics", "metacog_tasks", "rlmf_plugin")
        for path in sorted((repo / package).rglob("*.py"))
        if "packs" not in path.relative_to(repo).parts
    }
    generated = set(render_configs())
    configs = [p for p in sorted((repo / "task_configs").iterdir()) if p.is_file()]
    assert generated <= {p.name for p in configs}
    for path in configs:
        if path.name in generated:
            continue
        text = path.read_text(encoding="utf-8")
        texts[f"task_configs/{path.name}"] = _code_text(path) if path.suffix == ".py" else text
    assert "task_configs/_default_template_yaml" in texts
    for name in BENCHMARK_NAMES:
        record = benchmark_class(name)
        words = {name, record.title}
        pattern = "|".join(
            "[-_ ]?".join(re.escape(part) for part in re.split(r"[-_ ]", word)) for word in words
        )
        found = re.compile(rf"(?<![A-Za-z0-9])(?:{pattern})(?![A-Za-z0-9])", re.IGNORECASE)
        own = {
            f"metacog_tasks/benchmarks/{name}.py",
            f"metacog_tasks/benchmarks/_{name}_support.py",
        }
        naming = {f for f, text in texts.items() if f not in own and found.search(text)}
        assert not naming, (name, sorted(naming))


def _protocol_members(protocol: type) -> set[str]:
    names = {*vars(protocol), *getattr(protocol, "__annotations__", {})}
    return {n for n in names if not n.startswith("_")}


def test_records_that_run_code_or_have_problems_provide_what_the_harness_uses() -> None:
    """``runs_code`` and a ``problem`` task mode are promises: the Inspect sandbox and the
    multi-step protocol use only the members of their protocols, never a benchmark's name."""
    from metacog_tasks.inspect_tasks.problems import ProblemBenchmark
    from metacog_tasks.inspect_tasks.sandbox import CodeBenchmark

    code, problems = _protocol_members(CodeBenchmark), _protocol_members(ProblemBenchmark)
    assert code >= {"run_script", "sandbox_files", "sandbox_collect_mb", "timeout_s"}
    assert problems >= {"problem_text", "problem_turns", "targets", "grade_in_problem"}
    declared = {"code": 0, "problem": 0}
    for name in BENCHMARK_NAMES:
        bench = get_benchmark(name)
        if bench.runs_code:
            declared["code"] += 1
            assert all(hasattr(bench, m) for m in code), (name, code - set(dir(bench)))
        if "problem" in bench.task_modes:
            declared["problem"] += 1
            assert all(hasattr(bench, m) for m in problems), (name, problems - set(dir(bench)))
    assert declared["code"] and declared["problem"]  # the protocols are in use
