"""The report in a real browser: headless Chromium loads it, every inline SVG figure is laid out
at a readable size and draws something, and screenshots are saved (to
``$METACOG_SCREENSHOT_DIR`` when set).

Chromium is the Debian package ``chromium``; without it these tests skip (not the check of the
simulated run's tables, which needs no browser).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.pipeline import analyze_files
from tests.availability import unavailable

_CHECK = """<script>
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const bad = imgs.filter(i => !i.complete || i.naturalWidth === 0);
  const svgs = [...document.querySelectorAll("svg.fig")];
  document.body.setAttribute("data-images", imgs.length);
  document.body.setAttribute("data-broken", bad.length);
  document.body.setAttribute("data-height", document.documentElement.scrollHeight);
  document.body.setAttribute("data-figures", svgs.length);
  // viewBox width x height : shown width x height @ page x, y
  document.body.setAttribute("data-sizes", svgs.map(s => {
    const r = s.getBoundingClientRect();
    const v = s.viewBox.baseVal;
    return `${v.width}x${v.height}:${r.width}x${r.height}@${r.left + scrollX},${r.top + scrollY}`;
  }).join(";"));
});
</script>"""


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        unavailable("headless Chromium (Debian package 'chromium') is not installed")
    return path


def _run(chromium: str, *args: str, height: int = 1600) -> str:
    cmd = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--window-size=1280,{height}", *args]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _check_in_browser(chromium: str, report: Path, shots: Path, name: str) -> dict[str, str]:
    html = report.read_text(encoding="utf-8")
    probe = report.with_name("report.checked.html")
    probe.write_text(html.replace("</body>", _CHECK + "</body>"), encoding="utf-8")
    dom = _run(chromium, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    attrs = dict(re.findall(r'data-(images|broken|figures|sizes|height)="([^"]*)"', dom))
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / f"{name}.png"
    # The whole page in one screenshot: a window as tall as the page.
    _run(chromium, f"--screenshot={shot}", report.as_uri(), height=int(attrs["height"]) + 40)
    from PIL import Image

    with Image.open(shot) as im:
        grey = np.asarray(im.convert("L"))
    assert grey.shape[0] >= int(attrs["height"])
    assert (grey < 200).mean() > 0.02  # drawn, not a blank page
    assert int(attrs["images"]) == 0 and attrs["broken"] == "0", attrs  # no PNG left
    n_svg = len(re.findall(r'<svg [^>]*class="fig"', html))
    assert int(attrs["figures"]) == n_svg > 0
    for size in attrs["sizes"].split(";"):
        m = re.fullmatch(r"([\d.]+)x([\d.]+):([\d.]+)x([\d.]+)@([\d.]+),([\d.]+)", size)
        assert m, size
        vw, vh, w, h, x, y = (float(v) for v in m.groups())
        assert w > 0 and h > 0, size
        # The page may scale a figure down but keeps its proportions, and no further than 60%
        # of its drawn width (11 px tick labels stay above ~6.5 px).
        assert w / h == pytest.approx(vw / vh, rel=0.02), size
        assert w >= 0.6 * min(vw, 1100), size
        # Its place in the screenshot is not blank: the figure was drawn there.
        box = grey[int(y) : int(y + h), int(x) : int(x + w)]
        assert box.size and (box < 200).mean() > 0.01, size
    return attrs


def _shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("METACOG_SCREENSHOT_DIR") or tmp_path / "screenshots")


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory) -> Path:
    from metacog_tasks.sim.responder import simulate_text_records

    tmp = tmp_path_factory.mktemp("sim")
    records = simulate_text_records(8, benchmarks=["squad", "mathbench"], replicate=5, seed=3)
    path = tmp / "records.parquet"
    records.to_parquet(path)
    out = tmp / "out"
    analyze_files([path], out_dir=out, permutations=100, joint_permutations=50, n_boot=50,
                  progress=False)  # fmt: skip
    return out


def test_simulated_run_writes_the_paper_s_table(simulated_run):
    """tables/text_probes_paper.csv (benchmark, probe, model, Internal, Pop, QM, QP, QMP), the
    same values as text_probes.csv and summary.json["text_probes"]."""
    paper = pd.read_csv(simulated_run / "tables" / "text_probes_paper.csv")
    assert list(paper.columns) == ["benchmark", "probe", "model", "Internal", "Pop", "QM",
                                   "QP", "QMP"]  # fmt: skip
    assert set(paper["benchmark"]) == {"squad", "mathbench"} and len(paper) == 16
    full = pd.read_csv(simulated_run / "tables" / "text_probes.csv")
    assert np.allclose(paper["QMP"], full["auroc_QMP"]) and np.allclose(
        paper["Pop"], full["auroc_pop"]
    )
    summary = json.loads((simulated_run / "summary.json").read_text())
    groups = summary["text_probes"]["groups"]
    for row in paper.itertuples():
        entry = groups[row.benchmark][row.probe]["models"][row.model]
        assert entry["auroc_internal"] == pytest.approx(row.Internal)
        assert entry["auroc_QM"] == pytest.approx(row.QM)


def test_simulated_run_writes_per_record_inline_flags(simulated_run):
    """tables/inline_records.csv: one row per rationale with its score and flag; the rates
    table is their share per model and benchmark."""
    from metacog_metrics.inline_solving import detect_inline

    per = pd.read_csv(simulated_run / "tables" / "inline_records.csv")
    records = pd.read_parquet(simulated_run.parent / "records.parquet")
    assert len(per) == records["probe_text"].notna().sum() > 0
    merged = per.merge(records, on=["model", "benchmark", "item_id", "probe",
                                    "confidence_kind"])  # fmt: skip
    det = detect_inline(merged["probe_text"])
    assert (merged["inline_solved"].to_numpy() == det.flag).all()
    assert (merged["inline_score"].to_numpy() == det.score).all()
    assert merged["inline_solved"].sum() > 0
    rates = pd.read_csv(simulated_run / "tables" / "inline_rates.csv")
    share = per.groupby(["benchmark", "model"])["inline_solved"].mean()
    for row in rates.itertuples():
        assert row.inline_rate == pytest.approx(share[(row.benchmark, row.model)])


def test_simulated_report_with_text_sections_renders(chromium, simulated_run, tmp_path):
    html = (simulated_run / "report.html").read_text(encoding="utf-8")
    assert 'id="inline-solving"' in html and 'id="text-probes"' in html
    assert "Not shown" not in html
    _check_in_browser(chromium, simulated_run / "report.html", _shots(tmp_path), "simulated")


@pytest.mark.parametrize("run", ["cacioli_mmlu500_verbalized", "cacioli_battery_binary"])
def test_realruns_report_says_why_text_sections_are_absent(chromium, realruns_dir, tmp_path, run):
    tidy = realruns_dir / run / "tidy.csv"
    if not tidy.exists():
        unavailable(f"{tidy} is not in this checkout of the shared data")
    out = tmp_path / "real"
    result = analyze_files([tidy], out_dir=out, permutations=100, joint_permutations=50,
                           n_boot=50, progress=False)  # fmt: skip
    assert result.summary["inline_solving"]["status"] == "absent"
    assert result.summary["text_probes"]["status"] == "absent"
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Not shown: the records have no probe_text" in html
    assert "Not shown: the records have no question, probe_text or solve_text" in html
    _check_in_browser(chromium, out / "report.html", _shots(tmp_path), run)
