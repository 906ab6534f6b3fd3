"""The report in a real browser: headless Chromium loads it, every image decodes, nothing is
shrunk past legibility, and screenshots are saved (to ``$METACOG_SCREENSHOT_DIR`` when set).

Chromium is the Debian package ``chromium``; without it these tests skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from metacog_metrics.analyze import analyze_files
from tests.availability import unavailable

_CHECK = """<script>
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const bad = imgs.filter(i => !i.complete || i.naturalWidth === 0);
  document.body.setAttribute("data-images", imgs.length);
  document.body.setAttribute("data-broken", bad.length);
  document.body.setAttribute("data-height", document.documentElement.scrollHeight);
  document.body.setAttribute("data-sizes", imgs.map(i =>
    `${i.naturalWidth}x${i.naturalHeight}:${Math.round(i.getBoundingClientRect().width)}`
  ).join(","));
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
    attrs = dict(re.findall(r'data-(images|broken|sizes|height)="([^"]*)"', dom))
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / f"{name}.png"
    # The whole page in one screenshot: a window as tall as the page.
    _run(chromium, f"--screenshot={shot}", report.as_uri(), height=int(attrs["height"]) + 40)
    from PIL import Image

    with Image.open(shot) as im:
        grey = np.asarray(im.convert("L"))
    assert grey.shape[0] >= int(attrs["height"])
    assert (grey < 200).mean() > 0.02  # drawn, not a blank page
    n_img = html.count("<img ")
    assert int(attrs["images"]) == n_img > 0
    assert attrs["broken"] == "0", attrs
    for size in attrs["sizes"].split(","):
        natural, shown = size.split(":")
        width, height = (int(v) for v in natural.split("x"))
        # Figures are drawn at 96 dpi at least ~5 inches wide; the page may not shrink one
        # below 60% of that (text at 8 pt stays above ~6 px).
        assert width >= 400 and height >= 250, size
        assert int(shown) >= 0.6 * min(width, 1100), size
    return attrs


def _shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("METACOG_SCREENSHOT_DIR") or tmp_path / "screenshots")


def test_simulated_report_with_text_sections_renders(chromium, tmp_path):
    from metacog_tasks.sim.responder import simulate_text_records

    records = simulate_text_records(8, benchmarks=["squad", "mathbench"], replicate=5, seed=3)
    path = tmp_path / "records.parquet"
    records.to_parquet(path)
    out = tmp_path / "sim"
    analyze_files([path], out_dir=out, permutations=100, joint_permutations=50, n_boot=50,
                  progress=False)  # fmt: skip
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="inline-solving"' in html and 'id="text-probes"' in html
    assert "Not shown" not in html
    assert (out / "tables" / "text_probes.csv").exists()
    _check_in_browser(chromium, out / "report.html", _shots(tmp_path), "simulated")


def test_realruns_report_says_why_text_sections_are_absent(chromium, realruns_dir, tmp_path):
    tidy = realruns_dir / "cacioli_mmlu500_verbalized" / "tidy.csv"
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
    _check_in_browser(chromium, out / "report.html", _shots(tmp_path), "realruns")
