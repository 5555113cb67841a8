"""Every data source of the detector, which split it belongs to, and loading them all.

Sources are whole units: a source is either in the training split or in the held-out split
(``HELD_OUT``), never both, so the held-out figures measure families of text the model has not
seen. A training text that is a copy or near-copy of a held-out text is dropped from training.
``DATA.md`` lists each source with its licence and count (``train.py --counts`` prints them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from tools.jailbreak_detector import attacks, benign, compose, registries, scanners
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
    "aicu-scanner": scanners.aicu_scanner,
    "vigia": scanners.vigia,
    "promptbadger": scanners.promptbadger,
    "raginject": scanners.raginject,
    "protectrag": scanners.protectrag,
    "prompt-fuzz-cli": scanners.prompt_fuzz_cli,
    "aegisrt": scanners.aegisrt,
    "weiseer-prompt-redteam": scanners.weiseer,
    "prompt-lint-py": scanners.prompt_lint,
    "promptshields": registries.promptshields,
    "jailbreak-arena": registries.jailbreak_arena,
    "rag-redteam": registries.rag_redteam,
    "unplug-ai": registries.unplug_ai,
    "sentinelprobe": registries.sentinelprobe,
    "prompt-shield-ai": registries.prompt_shield_ai,
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
    "prompt-armor/benign": scanners.prompt_armor_benign,
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


SHINGLE_WORDS = 6
# A training text that shares this share of its (or a held-out text's) word 6-grams with one
# held-out text is a near-copy of it (the same template with another request, one sentence
# reworded) and is dropped from training, so the held-out figures measure unseen text.
NEAR_COPY_SHARE = 0.3


def _shingles(text: str) -> set[str]:
    words = _key(text).split()
    if len(words) <= SHINGLE_WORDS:
        return {" ".join(words)}
    return {" ".join(words[i:i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)}


class _NearCopies:
    """Finds the held-out text a training text is a near-copy of (word-shingle overlap)."""

    def __init__(self, held_out: list[Example]) -> None:
        self._sizes = [len(_shingles(e.text)) for e in held_out]
        self._index: dict[str, list[int]] = {}
        for i, example in enumerate(held_out):
            for shingle in _shingles(example.text):
                self._index.setdefault(shingle, []).append(i)

    def __contains__(self, text: str) -> bool:
        mine = _shingles(text)
        shared: dict[int, int] = {}
        for shingle in mine:
            for i in self._index.get(shingle, ()):
                shared[i] = shared.get(i, 0) + 1
        return any(n >= NEAR_COPY_SHARE * min(len(mine), self._sizes[i]) for i, n in shared.items())


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
    near_copies = _NearCopies(by_split[True])
    seen: set[str] = set()
    train = []
    for example in by_split[False]:
        key = _key(example.text)
        if key in seen or example.text in near_copies:
            continue
        seen.add(key)
        train.append(example)
    unique_held: dict[str, Example] = {}
    for example in by_split[True]:
        unique_held.setdefault(_key(example.text), example)
    return Split(train, list(unique_held.values()))
