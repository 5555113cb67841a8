"""The README's install line for the plain-openai app, run in a fresh venv of its own
(``tests/readme_install.py``, built by ``.ci/run``), then the README's example app from that venv
against a running sidecar: a new user who copies both gets a complete turn.

Found this way: ``pip install openai opentelemetry-instrumentation-openai-v2`` resolves to
opentelemetry-util-genai 1.3b0, which the instrumentation cannot import; and openai 3.x no longer
installs httpx, which the instrumentation imports. The README's line pins both.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.frameworks.test_readme_example import readme_example
from tests.readme_install import ROOT, install_lines, venv_python
from tests.support.fake_openai import FakeOpenAI
from tests.support.pipeline import running_sidecar

NAME = "genai-app"


def _python() -> Path:
    python = venv_python(NAME)
    if not python.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{python} is missing: .ci/run builds it with `python -m tests.readme_install venv`")
        pytest.skip(f"build it first: python -m tests.readme_install venv {NAME} (needs PyPI)")
    return python


def test_the_readme_names_an_install_line_for_its_example_app():
    args = install_lines((ROOT / "README.md").read_text())[NAME]
    assert "opentelemetry-instrumentation-openai-v2==2.4b0" in args
    assert "opentelemetry-util-genai==1.1b0" in args and "httpx" in args


async def test_readme_install_line_and_example_app_give_a_complete_turn(tmp_path):
    python = _python()
    app = tmp_path / "app.py"
    app.write_text(readme_example())
    async with FakeOpenAI({"refund take": "Refunds take 5 to 7 business days [kb-7]."}) as llm, \
            running_sidecar() as (sc, sink):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "PYTHON", "VIRTUAL_ENV"))}
        env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sc.http.port}",
                    "OTEL_SERVICE_NAME": "my-rag-app",
                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
                    "OPENAI_BASE_URL": llm.base_url or "", "OPENAI_API_KEY": "sk-test-not-a-real-key"})
        proc = await asyncio.create_subprocess_exec(str(python), str(app), env=env, cwd=tmp_path,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, err.decode()[-3000:]
        assert out.decode().strip() == "Refunds take 5 to 7 business days [kb-7]."
        (turn,) = await sink.wait_turns(1)
    assert (turn.conversation_id, turn.question) == ("conv-42", "How long does a refund take?")
    assert [(d.id, d.score) for d in turn.documents] == [("kb-7", 0.91)]
