"""Benign sources: ordinary questions and requests, many with words attacks also use, in several
languages, short and long (pasted documents, bug reports, writing briefs).
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

__all__ = ["writing_queries", "HARD_NEGATIVES_FILE", "WRITTEN_ATTACKS_FILE"]

HARD_NEGATIVES_FILE = Path(__file__).resolve().parent / "data" / "hard_negatives.txt"
WRITTEN_ATTACKS_FILE = Path(__file__).resolve().parent / "data" / "written_attacks.txt"
_INSPECT = "inspect_evals/"
_MAX_LONG = 600  # cap the long-paste sources so they do not drown the short questions


def writing_queries(w: Wheels) -> list[str]:
    """WritingBench requests (Chinese and English writing briefs, many with pasted material)."""
    rows = jsonl(w.text("inspect-evals", _INSPECT + "writingbench/benchmark_all.jsonl"))
    return [r["query"] for r in rows if r.get("query")]


def writingbench(w: Wheels) -> Iterator[Example]:
    for text in writing_queries(w):
        yield Example(text, 0, "inspect-evals/writingbench", "writing")


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


def security_questions(w: Wheels) -> Iterator[Example]:
    """CyberSecEval malware-analysis and threat-intelligence questions: security words, no attack."""
    for name in ("malware_analysis/questions.json", "threat_intel_reasoning/report_questions.json"):
        for row in json.loads(w.text("inspect-evals", _INSPECT + "cyberseceval_4/" + name)):
            question = row.get("question")
            if isinstance(question, str) and question.strip():
                yield Example(question, 0, "inspect-evals/security-questions", name.split("/")[0])


def web_tasks(w: Wheels) -> Iterator[Example]:
    rows = json.loads(w.text("inspect-evals", _INSPECT + "mind2web_sc/data/seeact/sample_labeled_all.json"))
    for row in rows:
        yield Example(row["confirmed_task"], 0, "inspect-evals/web-tasks", "task")


def assistant_queries(w: Wheels) -> Iterator[Example]:
    """PersistBench user queries (health, relationships, plans: personal and emotional)."""
    for name in ("beneficial_samples", "cross_domain", "sycophancy"):
        for row in jsonl(w.text("inspect-evals", f"{_INSPECT}persistbench/benchmark_samples/{name}.jsonl")):
            yield Example(row["query"], 0, "inspect-evals/assistant-queries", name)


def bug_reports(w: Wheels) -> Iterator[Example]:
    """SWE-Lancer issue titles and descriptions: long technical pastes (markdown, code, logs)."""
    csv.field_size_limit(1 << 26)
    member = _INSPECT + "swe_lancer/data/all_swelancer_tasks.csv"
    seen = 0
    for row in csv.DictReader(io.StringIO(w.text("inspect-evals", member))):
        if seen >= _MAX_LONG or not row.get("description"):
            continue
        seen += 1
        yield Example(row["title"] + "\n\n" + row["description"], 0, "inspect-evals/bug-reports", "issue")


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
