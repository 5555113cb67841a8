"""The Python examples of the README and of the Python API guide, run as a user would copy them:
each in a fresh interpreter with warnings as errors, and nothing on stderr but a progress bar —
no "Unclosed client session", no ResourceWarning, no traceback.

The guide's judge examples run against the scripted OpenAI-compatible judge of the tests on
127.0.0.1: the example that names ``http://localhost:8000/v1`` gets that URL replaced by the
fake judge's, the one that reads the environment (``Judge.from_env()``) gets the environment.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

from tests.support.judge_server import JudgeServer, schema_reply

ROOT = Path(__file__).resolve().parents[2]
_NOISE = ("Warning", "Unclosed", "Traceback", "Exception ignored")


def example(page: str, name: str) -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    match = re.search(rf"<!-- example:{name} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"{page} lost its example:{name}"
    return match.group(1)


async def _run(code: str, cwd: Path, **env: str) -> tuple[int, str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_MONITOR_", "OPENAI_"))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-W", "error", "-c", code, cwd=cwd, env={**base, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_the_readme_python_example_runs_clean(tmp_path: Path) -> None:
    code, out, err = await _run(example("README.md", "python-api"), tmp_path, PYTHONPATH=str(ROOT))
    assert code == 0, err
    assert err == ""
    assert out.splitlines() == ["f1_score 0.83 pass", "local_lexical_groundedness 1.0 pass"]


async def test_the_guide_judge_example_runs_clean(tmp_path: Path) -> None:
    source = example("docs/guides/python-api.md", "api-judge")
    async with JudgeServer(default=schema_reply({"score": 5, "reason": "the context names this tent"})) as judge:
        code, out, err = await _run(source.replace("http://localhost:8000/v1", judge.base_url), tmp_path,
                                    PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-test-not-a-real-key")
    assert code == 0, err
    assert err == ""
    assert out.strip() == "5.0 True the context names this tent"


async def test_the_guide_scorer_example_runs_clean(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "question": "Which tent is the most waterproof?", "answer": "The Alpine Explorer tent.",
             "context": ["The Alpine Explorer tent has the highest rainfly rating."], "ground_truth": "Alpine Explorer"}
            for i in range(3)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    async with JudgeServer(default=schema_reply()) as judge:
        code, out, err = await _run(example("docs/guides/python-api.md", "api-scorer"), tmp_path,
                                    PYTHONPATH=str(ROOT), RAG_MONITOR_JUDGE__BASE_URL=judge.base_url,
                                    RAG_MONITOR_JUDGE__MODEL="judge-model", OPENAI_API_KEY="sk-test-not-a-real-key")
    assert code == 0, err
    assert not any(word in err for word in _NOISE), err  # the progress bar is the only stderr output
    assert [line.split()[0] for line in out.splitlines()] == ["r0", "r1", "r2"]
