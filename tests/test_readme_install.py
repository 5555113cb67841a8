"""The README's install lines, each run word for word in a fresh venv of its own
(``tests/readme_install.py``, built by ``.ci/run``):

- the plain-openai example app: the line, then the README's example app from that venv against a
  running sidecar — a new user who copies both gets a complete turn;
- one line per instrumentation the "Your stack" table names: the instrumentation imports from its
  venv, and for the ``openai`` client rows a call instrumented by it (against a local fake OpenAI
  server) reaches a running sidecar as a turn with its question and answer.

Found this way: ``pip install openai opentelemetry-instrumentation-openai-v2`` resolves to
opentelemetry-util-genai 1.3b0, which the instrumentation cannot import; and openai 3.x no longer
installs httpx, which the instrumentation imports. The README's line pins both.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import pytest

from tests.frameworks.test_readme_example import readme_example
from tests.readme_install import VENVS, readme_install_lines, venv_python
from tests.support.fake_openai import FakeOpenAI
from tests.support.pipeline import running_sidecar

NAME = "genai-app"
QUESTION = "How long does a refund take?"
ANSWER = "Refunds take 5 to 7 business days [kb-7]."

# Every install line the README is expected to show (its `<!-- install:NAME -->` markers), one per
# instrumentation of the "Your stack" table, with what must import from the venv it builds.
INSTRUMENTATION_IMPORTS: dict[str, str] = {
    "openinference-openai": "from openinference.instrumentation.openai import OpenAIInstrumentor; import openai",
    "openllmetry-openai": "from traceloop.sdk import Traceloop; from opentelemetry.instrumentation.openai import "
                          "OpenAIInstrumentor; import openai",
    "openlit-openai": "import openlit, openai",
    "langchain-openinference": "from openinference.instrumentation.langchain import LangChainInstrumentor; "
                               "import langchain_openai",
    "langchain-openllmetry": "from traceloop.sdk import Traceloop; from opentelemetry.instrumentation.langchain "
                             "import LangchainInstrumentor; import langchain_openai",
    "llamaindex-openinference": "from openinference.instrumentation.llama_index import LlamaIndexInstrumentor; "
                                "import llama_index.core, llama_index.llms.openai",
    "llamaindex-openllmetry": "from traceloop.sdk import Traceloop; from opentelemetry.instrumentation.llamaindex "
                              "import LlamaIndexInstrumentor; import llama_index.core",
    "haystack-openinference": "from openinference.instrumentation.haystack import HaystackInstrumentor; "
                              "from haystack.components.generators.chat import OpenAIChatGenerator",
    "haystack-tracer": "from haystack import tracing; "
                       "from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer",
    "pydantic-ai": "from pydantic_ai import Agent; from pydantic_ai.models.instrumented import InstrumentationSettings",
    "openai-agents-openinference": "from openinference.instrumentation.openai_agents import "
                                   "OpenAIAgentsInstrumentor; import agents",
}

# The `openai` client rows: how each instrumentation is switched on, exporting to
# OTEL_EXPORTER_OTLP_ENDPOINT (the sidecar), and how its spans are flushed before exit.
_SDK_SETUP = """
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
"""
CALL_SETUPS: dict[str, tuple[str, str]] = {
    "openinference-openai": (_SDK_SETUP + """
from openinference.instrumentation.openai import OpenAIInstrumentor
OpenAIInstrumentor().instrument(tracer_provider=provider)
""", "provider.shutdown()"),
    "openllmetry-openai": ("""
from traceloop.sdk import Traceloop
from traceloop.sdk.instruments import Instruments
Traceloop.init(app_name="readme-check", api_endpoint=os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"],
               disable_batch=True, telemetry_enabled=False, instruments={Instruments.OPENAI})
""", "# disable_batch: each span was exported when it ended"),
    "openlit-openai": ("""
import json, openlit, tempfile
pricing = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
json.dump({"chat": {"gpt-4o-mini": {"promptPrice": 0.00015, "completionPrice": 0.0006}},
           "embeddings": {}, "images": {}, "audio": {}}, pricing)
pricing.close()
# pricing_json: a local table (openlit.init downloads one otherwise); no metrics or host stats.
openlit.init(otlp_endpoint=os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"], disable_batch=True, disable_metrics=True,
             collect_gpu_stats=False, pricing_json=pricing.name)
""", "from opentelemetry import trace; trace.get_tracer_provider().shutdown()"),
}
_CALL = """
import openai
reply = openai.OpenAI().chat.completions.create(model="gpt-4o-mini", messages=[
    {"role": "system", "content": "Answer briefly."}, {"role": "user", "content": %r}])
print(reply.choices[0].message.content)
"""


def _python(name: str) -> Path:
    """The venv built from the README's line ``name``, exactly as it reads now."""
    python = venv_python(name)
    stamp = VENVS / name / ".install-line.sha256"  # written once the line installed completely
    if not stamp.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{python} is missing: .ci/run builds it with `python -m tests.readme_install venv`")
        pytest.skip(f"build it first: python -m tests.readme_install venv {name} (needs PyPI)")
    line = " ".join(readme_install_lines()[name])
    assert stamp.read_text() == hashlib.sha256(line.encode()).hexdigest(), (
        f"{VENVS / name} was built from another line than the README's `pip install {line}`: "
        f"run python -m tests.readme_install venv {name}")
    return python


def _require_line(name: str) -> None:
    # Every stack the README's table names has its install line in the README, tested here.
    assert name in readme_install_lines(), f"the README lost its `<!-- install:{name} -->` line"


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "PYTHON", "VIRTUAL_ENV",
                                                                      "TRACELOOP_"))}
    env.update(extra)
    return env


async def _run(python: Path, args: list[str], env: dict[str, str], cwd: Path, clean: bool = False) -> str:
    """stdout of a successful run; ``clean``: nothing at all on stderr (no warning)."""
    proc = await asyncio.create_subprocess_exec(str(python), *args, env=env, cwd=cwd,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    if clean:
        assert err.decode() == "", err.decode()[-3000:]
    return out.decode()


def test_the_readme_names_an_install_line_for_its_example_app() -> None:
    args = readme_install_lines()[NAME]
    assert "opentelemetry-instrumentation-openai-v2==2.4b0" in args
    assert "opentelemetry-util-genai==1.1b0" in args and "httpx" in args


async def test_readme_install_line_and_example_app_give_a_complete_turn(tmp_path: Path) -> None:
    python = _python(NAME)
    app = tmp_path / "app.py"
    app.write_text(readme_example())
    async with FakeOpenAI({"refund take": ANSWER}) as llm, running_sidecar() as (sc, sink):
        assert sc.http is not None
        env = _clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{sc.http.port}",
                         OTEL_SERVICE_NAME="my-rag-app", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="SPAN_ONLY",
                         OPENAI_BASE_URL=llm.base_url or "", OPENAI_API_KEY="sk-test-not-a-real-key")
        out = await _run(python, [str(app)], env, tmp_path, clean=True)
        assert out.strip() == ANSWER
        (turn,) = await sink.wait_turns(1)
    assert (turn.conversation_id, turn.question) == ("conv-42", QUESTION)
    assert [(d.id, d.score) for d in turn.documents] == [("kb-7", 0.91)]


@pytest.mark.parametrize("name", sorted(INSTRUMENTATION_IMPORTS))
async def test_each_instrumentation_install_line_gives_an_importable_instrumentation(name: str, tmp_path: Path) -> None:
    _require_line(name)
    python = _python(name)
    out = await _run(python, ["-c", INSTRUMENTATION_IMPORTS[name] + "; print('imported')"], _clean_env(), tmp_path)
    assert out.strip().endswith("imported")


@pytest.mark.parametrize("name", sorted(CALL_SETUPS))
async def test_each_openai_instrumentation_install_line_traces_a_call_into_the_sidecar(name: str,
                                                                                     tmp_path: Path) -> None:
    _require_line(name)
    python = _python(name)
    setup, flush = CALL_SETUPS[name]
    app = tmp_path / "app.py"
    app.write_text("import os\n" + setup + _CALL % QUESTION + flush + "\n")
    async with FakeOpenAI({"refund take": ANSWER}) as llm, running_sidecar() as (sc, sink):
        assert sc.http is not None
        env = _clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{sc.http.port}",
                         OTEL_SERVICE_NAME=f"readme-{name}", OPENAI_BASE_URL=llm.base_url or "",
                         OPENAI_API_KEY="sk-test-not-a-real-key")
        out = await _run(python, [str(app)], env, tmp_path)
        assert out.strip().splitlines()[-1] == ANSWER
        turns = await sink.wait_turns(1)
    assert [(t.question, t.answer) for t in turns] == [(QUESTION, ANSWER)]
