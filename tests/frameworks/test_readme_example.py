"""The README's plain-openai GenAI app, run word for word against a running sidecar.

The example is the code block after ``<!-- example:genai-app -->`` in README.md; it runs in a
subprocess with the environment the README tells users to set, the fake OpenAI server standing
in for the real API (``OPENAI_BASE_URL``).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from tests.support.fake_openai import FakeOpenAI
from tests.support.pipeline import running_sidecar

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- example:genai-app -->\n```python\n(.*?)```", text, re.S)
    assert match, "README lost its example app"
    return match.group(1)


async def test_readme_genai_app_yields_a_complete_turn(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(readme_example())
    async with FakeOpenAI({"refund take": "Refunds take 5 to 7 business days [kb-7]."}) as llm, \
            running_sidecar() as (sc, sink):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
        env.update({
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sc.http.port}",
            "OTEL_SERVICE_NAME": "my-rag-app",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
            "OPENAI_BASE_URL": llm.base_url or "",
            "OPENAI_API_KEY": "sk-test-not-a-real-key",
        })
        proc = await asyncio.create_subprocess_exec(sys.executable, str(app), env=env, cwd=tmp_path,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()[-3000:]
        assert err.decode() == ""  # copied as written, the example runs clean: no warning at all
        assert out.decode().strip() == "Refunds take 5 to 7 business days [kb-7]."
        (turn,) = await sink.wait_turns(1)
    assert turn.conversation_id == "conv-42"
    assert turn.question == "How long does a refund take?"
    assert turn.answer == "Refunds take 5 to 7 business days [kb-7]."
    assert [(d.id, d.content, d.score) for d in turn.documents] == [("kb-7", "Refunds take 5 to 7 business days.", 0.91)]
    assert turn.service == "my-rag-app"
    assert (turn.request_model, turn.response_model) == ("gpt-4o-mini", "gpt-4o-mini-2024-07-18")
    assert turn.system_prompt and turn.system_prompt.startswith("Answer from these documents:")
