"""The documentation site: built strictly (a broken link, a missing page or a page left out of
the nav fails), its generated references current with the code, and the README short."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.docs.generate import OUT, render_all

ROOT = Path(__file__).resolve().parents[2]


def test_the_generated_references_match_the_code() -> None:
    stale = [name for name, text in render_all().items()
             if not (OUT / name).exists() or (OUT / name).read_text(encoding="utf-8") != text]
    assert not stale, f"stale generated pages {stale}: run python -m tools.docs.generate and commit docs/reference/"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs is missing: the test extra installs it (pip install -e '.[test]')")
        pytest.skip("mkdocs not installed: pip install -r docs/requirements.txt")
    proc = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "metrics" / "index.html").exists()


def test_the_readme_fits_on_a_screen_and_every_doc_page_is_in_the_nav() -> None:
    import yaml

    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]

    def pages(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [p for item in node for p in pages(item)]
        if isinstance(node, dict):
            return [p for value in node.values() for p in pages(value)]
        return []

    listed = set(pages(nav))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk - listed == set(), "pages missing from mkdocs.yml's nav"


def test_every_metric_declares_its_inputs_and_seed() -> None:
    from monitor.evaluation.registry import default_registry

    registry = default_registry()
    undeclared = [m for m in registry.ids() if not registry.get(m).declared_inputs() or not registry.get(m).seed]
    assert undeclared == [], "declare inputs= and seed= on these MetricSpecs (the metric reference shows them)"


def test_every_link_of_the_readme_resolves() -> None:
    import re

    for page in (ROOT / "README.md",):
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not target.startswith(("http://", "https://", "mailto:")):
                assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


def test_the_getting_started_example_app_is_the_readme_s() -> None:
    import re

    def block(page: Path) -> str:
        match = re.search(r"<!-- example:genai-app -->\n```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        assert match, f"{page} lost its example app"
        return match.group(1)

    # The README's copy is the one run word for word (tests/frameworks/test_readme_example.py).
    assert block(ROOT / "docs" / "getting-started.md") == block(ROOT / "README.md")
