"""``rag-monitor eval`` with metrics on Azure AI Content Safety and no LLM judge.

The real service cannot be reached from tests; the official SDK talks to the local fake of the
REST API (tests/support/content_safety_server.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tests.support.content_safety_server import KEY, ContentSafetyServer


async def test_eval_scores_service_metrics_without_a_judge(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"question": "q?", "answer": a, "context": "Tents keep rain out."}) + "\n"
                            for a in ("Go fight them.", "Tents keep rain out.", "Stake it.")))
    out = tmp_path / "out.jsonl"
    reply = {"ungroundedDetected": False, "ungroundedPercentage": 0.0, "ungroundedDetails": []}
    async with ContentSafetyServer(severity_for=lambda c, t: 6 if "fight" in t and c == "Violence" else 0,
                                   groundedness_for=lambda body: reply) as server:
        config = tmp_path / "config.yaml"
        config.write_text(json.dumps({"evaluation": {
            "content_safety": {"endpoint": server.endpoint},
            "metrics": [{"id": "violence", "backend": "azure_content_safety"},
                        {"id": "groundedness", "backend": "azure_content_safety"}, "f1_score"]}}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_MONITOR_", "OPENAI_"))}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "monitor.cli", "eval", str(data), "-c", str(config), "--out", str(out),
            env={**env, "AZURE_CONTENT_SAFETY_KEY": KEY},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        stdout, stderr = (s.decode() for s in await asyncio.wait_for(proc.communicate(), 120))
    assert proc.returncode == 0, stderr
    assert "not run" not in stderr
    table = {ln.split()[0]: ln.split() for ln in stdout.splitlines() if ln.split()}
    assert table["violence"][1] == "3" and table["groundedness"][1] == "3"
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    violence = [next(s for s in r["scores"] if s["metric"] == "violence") for r in rows]
    assert sorted(s["value"] for s in violence) == [0.0, 0.0, 6.0]
    assert all(s["details"]["backend"] == "azure_content_safety" for s in violence)
    assert len(server.calls) == 6
