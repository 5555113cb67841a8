"""Every data source of the detector, which split it belongs to, and loading them all.

Sources are whole units: a source is either in the training split or in the held-out split
(``HELD_OUT``), never both, so the held-out figures measure families of text the model has not
seen. A text that occurs in both splits is dropped from training. ``DATA.md`` lists each source
with its licence and count (``train.py --counts`` prints them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from tools.jailbreak_detector import attacks, benign, compose
from tools.jailbreak_detector.example import Example
from tools.jailbreak_detector.wheels import Wheels

__all__ = ["SOURCES", "HELD_OUT", "load", "Split"]

Loader = Callable[[Wheels], Iterator[Example]]

SOURCES: dict[str, Loader] = {
    # attacks
    "llamator": attacks.llamator,
    "prompt-security-fuzzer": attacks.prompt_security_fuzzer,
    "spikee": attacks.spikee,
    "inspect-evals/ipi-issues": attacks.inspect_ipi,
    "attack-code": attacks.attack_modules,
    "agentdojo/injections": attacks.agentdojo_injections,
    "nullsec-promptinject": attacks.nullsec_payloads,
    "agent-injection-bench/attacks": attacks.agent_injection_bench,
    "rag-monitor/written-attacks": benign.written_attacks,
    "antler/techniques": attacks.antler_techniques,
    "jailscan/scenarios": attacks.jailscan_scenarios,
    "rag-monitor/composed": compose.composed,
    "bastioncorpus/malicious": attacks.bastion,
    "hermes-jailbench/attacks": attacks.hermes,
    "jailbreak-corpus-mini": attacks.jailbreak_corpus_mini,
    "langkit/themes": attacks.langkit_themes,
    # benign
    "chatterbot-corpus": benign.chatterbot,
    "edgy-requests": benign.edgy_requests,
    "agent-injection-bench/tasks": benign.agent_tasks,
    "python-stdlib/docstrings": benign.stdlib_docstrings,
    "inspect-evals/coding-tasks": benign.coding_tasks,
    "spikee/investment": lambda w: benign.spikee_investment(w, False),
    "rag-monitor/hard-negatives": benign.hard_negatives,
    "bastioncorpus/benign": lambda w: attacks.bastion(w, 0),
    "spikee/investment-fp": lambda w: benign.spikee_investment(w, True),
    "inspect-evals/freshqa": benign.freshqa,
    "inspect-evals/agent-threat-inputs": benign.agent_threat_inputs,
}
# Dropped from training (DATA.md says why): easyjailbreak (GPL-3.0) and the inspect-evals copies
# of WritingBench, PersistBench, CyberSecEval 4, SWE-Lancer and Mind2Web-SC, whose upstream
# data licences are not stated in the wheel or are not permissive.

# Held out by source: diverse attack collections (personas, overrides, extraction, encodings,
# several languages) and benign sets with trigger words (bastion's benign rows), topical
# near-misses (investment questions), agent tasks and plain factual questions.
HELD_OUT = frozenset({
    "bastioncorpus/malicious", "hermes-jailbench/attacks", "jailbreak-corpus-mini", "langkit/themes",
    "bastioncorpus/benign", "spikee/investment-fp", "inspect-evals/agent-threat-inputs",
    "inspect-evals/freshqa",
})


def _key(text: str) -> str:
    return " ".join(text.lower().split())


class Split:
    """Training and held-out examples, deduplicated (held-out copies win)."""

    def __init__(self, train: list[Example], held_out: list[Example]) -> None:
        self.train = train
        self.held_out = held_out


def load(cache: Path) -> Split:
    """Read every source from the wheels in ``cache``."""
    wheels = Wheels(cache)
    by_split: dict[bool, list[Example]] = {True: [], False: []}
    for name, loader in SOURCES.items():
        examples = [e for e in loader(wheels) if e.text.strip()]
        assert all(e.source.startswith(name.split("/")[0]) for e in examples), name
        by_split[name in HELD_OUT].extend(examples)
    held_keys = {_key(e.text) for e in by_split[True]}
    seen: set[str] = set()
    train = []
    for example in by_split[False]:
        key = _key(example.text)
        if key in held_keys or key in seen:
            continue
        seen.add(key)
        train.append(example)
    unique_held: dict[str, Example] = {}
    for example in by_split[True]:
        unique_held.setdefault(_key(example.text), example)
    return Split(train, list(unique_held.values()))
