"""docs/guides/human-feedback.md's examples, run against a real sidecar: the Python OTLP example in a
fresh interpreter (warnings as errors) and the curl command with curl, each with only the address,
token and trace id of the test put in; both verdicts must join the judge's score."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from tests.feedback.harness import COHERENCE_DEFECT, REVIEW_TOKEN, App, Results, feedback_config, until
from tests.support.judge_server import JudgeServer, reply_json
from tests.support.pipeline import RecordingSink

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "human-feedback.md"
DOC_TRACE = "0af7651916cd43dd8448eb211c80319c"


def block(name: str, language: str) -> str:
    match = re.search(rf"<!-- example:{name} -->\n```{language}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    assert match, f"the guide lost its example:{name}"
    return match.group(1)


async def _run(*argv: str, **env: str) -> tuple[int, str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_MONITOR_", "OTEL_"))}
    proc = await asyncio.create_subprocess_exec(*argv, env={**base, **env}, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_the_guides_otlp_and_curl_examples_send_verdicts_that_join() -> None:
    python = block("otlp-verdict", "python")
    curl = block("curl-verdict", "text")
    assert "127.0.0.1:4318" in python and "127.0.0.1:9464" in curl and DOC_TRACE in curl
    async with JudgeServer(default=reply_json(COHERENCE_DEFECT)) as judge:
        results = Results()
        sidecar = Sidecar(feedback_config(judge.base_url), sink=RecordingSink(), registry=CollectorRegistry(),
                          result_consumers=[results])
        await sidecar.start()
        app = App(sidecar.http.port)
        try:
            first, second = app.turn(), app.turn()
            await app.flush()
            await results.wait_for(first)
            await results.wait_for(second)
            code = (python.replace("127.0.0.1:4318", f"127.0.0.1:{sidecar.http.port}")
                    + f"\nsend_verdict({first!r}, 'coherence', 'defect', 'frank')\nprovider.shutdown()\n")
            status, out, err = await _run(sys.executable, "-W", "error", "-c", code)
            assert status == 0 and not err.strip(), err
            command = (curl.replace("127.0.0.1:9464", f"127.0.0.1:{sidecar.admin.port}")
                       .replace(DOC_TRACE, second).replace('"groundedness"', '"coherence"'))
            status, out, err = await _run("bash", "-c", command, REVIEW_TOKEN=REVIEW_TOKEN)
            assert status == 0, err
            assert '"state":"joined"' in out and '"agreement":"agree"' in out, out
            await until(lambda: sidecar.registry.get_sample_value(
                "rag_monitor_judge_agreement_total",
                {"metric": "coherence", "judge_model": "judge-model", "agreement": "agree"}) == 2.0)
        finally:
            await app.close()
            await sidecar.shutdown()
