"""The README's quick-start line, run word for word in a fresh copy of the work tree, for
``tests/docs/test_commands.py``.

The line is ``python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/rag-monitor serve``:
``.ci/run`` runs every part before the last here (PyPI is reached there, never from a test)::

    python -m tests.docs.quickstart build

and the test runs the last part, which serves until stopped, from the same directory. The copy
lives in ``.venv-readme/quickstart/`` (git's tracked and not-ignored files) and is rebuilt when
the line or the work tree changes (about 40 s with a warm pip cache).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COPY = ROOT / ".venv-readme" / "quickstart"
STAMP = ".quickstart.sha256"

__all__ = ["shell_blocks", "quickstart_line", "setup_and_serve", "build", "COPY", "STAMP"]


def shell_blocks(page: Path) -> list[str]:
    """The ```bash blocks of ``page``, ``\\`` continuations kept."""
    return [b.strip() for b in re.findall(r"```(?:bash|sh)\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]


def quickstart_line(page: Path = README) -> str:
    (line,) = [b for b in shell_blocks(page) if b.startswith("python3 -m venv")]
    return line


def setup_and_serve(line: str) -> tuple[str, str]:
    """The parts before the last ``&&`` (the setup) and the last part (the server)."""
    setup, _, serve = line.rpartition(" && ")
    return setup, serve


def _tree_digest(line: str) -> str:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.split(b"\0")
    digest = hashlib.sha256(line.encode())
    for name in sorted(f for f in files if f):
        path = ROOT / name.decode()
        if path.is_file():
            digest.update(name + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def build() -> Path:
    """Copy the work tree to COPY and run the line's setup there, word for word (skipped while
    neither the line nor the tree changed). Returns COPY."""
    line = quickstart_line()
    digest = _tree_digest(line)
    stamp = COPY / STAMP
    if stamp.exists() and stamp.read_text() == digest:
        return COPY
    shutil.rmtree(COPY, ignore_errors=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.split(b"\0")
    for name in (f.decode() for f in files if f):
        source = ROOT / name
        if source.is_file():
            (COPY / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, COPY / name)
    setup, _ = setup_and_serve(line)
    subprocess.run(["bash", "-c", setup], cwd=COPY, check=True)
    stamp.write_text(digest)
    return COPY


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.docs.quickstart")
    parser.add_argument("command", choices=["build"])
    parser.parse_args(argv)
    print(build())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
