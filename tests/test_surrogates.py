"""Lone surrogates out of parsed JSON at each place JSON enters: the helper, message JSON inside
attributes, eval datasets (OTLP/JSON bodies: tests/receivers/test_hostile_http.py)."""

from __future__ import annotations

import json
from pathlib import Path

from monitor.assembly.messages import load_json
from monitor.offline.rows import read_dataset
from monitor.surrogates import may_hold_surrogates, replace_lone_surrogates


def test_every_string_and_key_loses_its_lone_surrogates_and_pairs_stay() -> None:
    doc = json.loads('{"k\\ud800": ["a\\udfffb", {"x": "\\ud83d\\ude00 ok", "n": 1.5}], "deep": [[[["\\udbff"]]]]}')
    clean = replace_lone_surrogates(doc)
    assert clean == {"k\ufffd": ["a\ufffdb", {"x": "\U0001F600 ok", "n": 1.5}], "deep": [[[["\ufffd"]]]]}
    json.dumps(clean, ensure_ascii=False).encode("utf-8")


def test_the_check_finds_escapes_and_characters_and_nothing_else() -> None:
    assert may_hold_surrogates(b'{"a": "\\ud800"}') and may_hold_surrogates("x\udc00")
    assert may_hold_surrogates('{"a": "\\uDBFF"}')
    assert not may_hold_surrogates(b'{"a": "\\u00e9 \\n \\\\ plain"}') and not may_hold_surrogates("caf\u00e9")


def test_message_json_inside_an_attribute() -> None:
    messages = load_json('[{"role": "user", "content": "is it \\ud800 waterproof?"}]')
    assert messages == [{"role": "user", "content": "is it \ufffd waterproof?"}]


def test_an_eval_dataset_row(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"question": "is it \\ud800 waterproof?", "context": "It is.", "answer": "Yes."}\n',
                    encoding="utf-8")
    (row,) = read_dataset(path).rows
    (turn,) = row.turns
    assert turn.question == "is it \ufffd waterproof?"
