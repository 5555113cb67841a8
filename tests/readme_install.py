"""The README's install lines, run word for word in a fresh venv each, for the tests that then
drive the README's own example app from that venv (``tests/test_readme_install.py``).

A line is the ``pip install …`` of a ```bash block right after ``<!-- install:NAME -->`` in
README.md or a page of the documentation site under docs/ (``\\`` continuations joined). Each venv lives in ``.venv-readme/NAME`` and is rebuilt when
its line changes. ``.ci/run`` builds them before pytest (PyPI is reached there, never from a
test)::

    python -m tests.readme_install venv [NAME ...]

Cost: a first build downloads and installs each line's packages (about 12 venvs, 0.1-0.3 GB each,
minutes each on a cold pip cache); later runs reuse every venv whose line is unchanged (a hash
compare, well under a second). ``RAG_MONITOR_README`` names another README to read the lines
from, to try lines before they are merged.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = Path(os.environ.get("RAG_MONITOR_README_VENVS", ROOT / ".venv-readme"))
README = Path(os.environ.get("RAG_MONITOR_README", ROOT / "README.md"))

__all__ = ["README", "install_lines", "readme_install_lines", "venv_python", "ensure_venv"]


def install_lines(text: str) -> dict[str, list[str]]:
    """NAME → the pip arguments after ``pip install`` of each marked block."""
    found: dict[str, list[str]] = {}
    for name, block in re.findall(r"<!-- install:([a-z0-9-]+) -->\n```(?:bash|sh)\n(.*?)```", text, re.S):
        command = block.replace("\\\n", " ").strip()
        words = shlex.split(command)
        assert words[:2] == ["pip", "install"], f"install:{name} is not a pip install line: {command}"
        found[name] = words[2:]
    return found


DOCS = ROOT / "docs"


def readme_install_lines() -> dict[str, list[str]]:
    """The install lines of the README the tests read (``RAG_MONITOR_README`` or README.md) and
    of the documentation pages (docs/**/*.md, where "Your framework" keeps one per stack). A name
    shown on two pages must carry the same line on both."""
    found = install_lines(README.read_text(encoding="utf-8"))
    for page in sorted(DOCS.rglob("*.md")):
        for name, args in install_lines(page.read_text(encoding="utf-8")).items():
            assert found.setdefault(name, args) == args, f"install:{name} differs between pages ({page})"
    return found


def venv_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def ensure_venv(name: str, quiet: bool = True) -> Path:
    """Create (or rebuild, when the README's line changed) the venv for ``name``; its python."""
    args = readme_install_lines()[name]
    venv = VENVS / name
    stamp = venv / ".install-line.sha256"
    digest = hashlib.sha256(" ".join(args).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest and venv_python(name).exists():
        return venv_python(name)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv_python(name)), "-m", "pip", "install", "--disable-pip-version-check", *(["-q"] if quiet else [])]
    subprocess.run([*pip, *args], check=True)
    stamp.write_text(digest)
    return venv_python(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.readme_install")
    sub = parser.add_subparsers(dest="command", required=True)
    venv = sub.add_parser("venv", help="build the venv of each README install line (or of NAMEs)")
    venv.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    names = args.names or sorted(readme_install_lines())
    for name in names:
        print(ensure_venv(name, quiet=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
