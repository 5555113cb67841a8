"""What the framework capture apps (``tests/frameworks/<stack>/app.py``) have in common.

Each app runs in a venv of its own with its own OpenTelemetry version (``harness.py``), so this
module imports only the standard library and stdlib-only project modules at import time; every
OpenTelemetry import is inside a function. All stacks have ``opentelemetry-sdk`` and
``opentelemetry-exporter-otlp-proto-http``.

What is here: the command line of the harness contract (``parse_args``), the service's identity
and its OTLP/HTTP protobuf pipeline (``Telemetry``), the app's ``POST /chat`` SERVER span
(``chat_request_span``), the truth line of a turn (``emit_turn``), the no-internet guard
(``guard_network``), and for the tool-calling agents the knowledge-base search tool
(``SearchTool``) and their turn loop (``agent_conversation``). What a framework does, and how a
stack instruments it and sets the conversation id, stays in the app.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import socket
import sys
from contextlib import contextmanager, nullcontext
from typing import Any, Awaitable, Callable, ContextManager, Iterator, Sequence

from tests.frameworks.truth import ChatCallLog, emit, truth_line
from tests.support.rag_app import CHAT_MODEL, CONVERSATION_QUESTIONS, SERVICE_NAME, TOP_K, retrieve

__all__ = [
    "SERVICE_NAME", "SERVICE_VERSION", "CHAT_MODEL", "API_KEY", "TOP_K", "APP_TRACER", "ROOT_SPAN_NAME",
    "ROOT_SPAN_ATTRIBUTES", "AGENT_INSTRUCTIONS", "parse_args", "guard_network", "stdout_to_stderr",
    "Telemetry", "chat_request_span", "trace_id_of", "system_prompt_of", "emit_turn", "exchange", "SearchTool",
    "agent_conversation",
]

SERVICE_VERSION = "1.4.2"
RESOURCE_ATTRIBUTES = {
    "service.name": SERVICE_NAME,
    "service.version": SERVICE_VERSION,
    "deployment.environment.name": "test",
}
API_KEY = "sk-test-not-a-real-key"  # the fake OpenAI server takes any key
EXPORTER = "http-protobuf"
APP_TRACER = "rag_demo_app"  # instrumentation scope of the app's own spans
ROOT_SPAN_NAME = "POST /chat"
# The app's HTTP server span, as a web framework's instrumentation would write it.
ROOT_SPAN_ATTRIBUTES: dict[str, Any] = {
    "http.request.method": "POST",
    "http.route": "/chat",
    "url.path": "/chat",
    "url.scheme": "http",
    "server.address": "127.0.0.1",
    "server.port": 8080,
}
# The system prompt of the tool-calling agents (pydanticai, openaiagents): retrieval is a tool.
AGENT_INSTRUCTIONS = (
    "You are the Acme Cloud Backup support assistant. Always call the search_docs tool to look the "
    "question up in the help center, then answer using only the documents it returns. Cite document "
    "ids in square brackets. If the documents do not contain the answer, say you don't know."
)


# ------------------------------------------------------------------------------------------------
# Command line (the harness contract, see harness.py)
# ------------------------------------------------------------------------------------------------


def parse_args(stack: str, combinations: Sequence[tuple[str, str]], argv: Sequence[str] | None = None,
               description: str | None = None) -> argparse.Namespace:
    """Parse the harness command line. ``--list`` prints ``combinations`` as JSON and exits 0."""
    instrumentations = list(dict.fromkeys(i for i, _ in combinations))
    scenarios = list(dict.fromkeys(s for _, s in combinations))
    p = argparse.ArgumentParser(prog=f"tests/frameworks/{stack}/app.py", description=description)
    p.add_argument("--list", action="store_true",
                   help="print the supported [instrumentation, scenario] pairs as JSON and exit")
    p.add_argument("--instrumentation", choices=instrumentations, default=instrumentations[0])
    p.add_argument("--scenario", choices=scenarios, default=scenarios[0])
    p.add_argument("--endpoint", default="http://127.0.0.1:4318", help="OTLP/HTTP base URL")
    p.add_argument("--openai-base-url", help="the (fake) OpenAI server, http://127.0.0.1:PORT/v1")
    p.add_argument("--conversation-id", default=f"conv-{stack}")
    p.add_argument("--exporter", choices=[EXPORTER], default=EXPORTER)
    args = p.parse_args(argv)
    if args.list:
        print(json.dumps([[i, s] for i, s in combinations]))
        p.exit()
    if (args.instrumentation, args.scenario) not in {(i, s) for i, s in combinations}:
        p.error(f"unsupported combination {args.instrumentation}/{args.scenario}")
    if not args.openai_base_url:
        p.error("--openai-base-url is required")
    args.stack = stack
    return args


# ------------------------------------------------------------------------------------------------
# No internet: anything but loopback fails loudly (tiktoken BPE, nltk data, telemetry, ...)
# ------------------------------------------------------------------------------------------------


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if host in ("localhost", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def guard_network(stack: str) -> None:
    """Refuse (and report on stderr) every name lookup and connection that is not to loopback."""
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(host):
            print(f"[{stack} app] BLOCKED name lookup of {host!r}", file=sys.stderr)
            raise socket.gaierror(f"network blocked in capture app: {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
            print(f"[{stack} app] BLOCKED connect to {address!r}", file=sys.stderr)
            raise OSError(f"network blocked in capture app: {address}")
        return real_connect(self, address)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.socket.connect = connect  # type: ignore[method-assign]


def stdout_to_stderr() -> None:
    """Send what libraries print (Traceloop banners, ...) to stderr: stdout carries truth lines only
    (``emit_turn`` writes them on ``sys.__stdout__``)."""
    sys.stdout = sys.stderr


# ------------------------------------------------------------------------------------------------
# Telemetry: the service's resource, OTLP/HTTP protobuf to <endpoint>/v1/traces (and /v1/logs)
# ------------------------------------------------------------------------------------------------


class Telemetry:
    """The app's SDK TracerProvider (and LoggerProvider when ``logs``) with the OTLP/HTTP exporters.

    ``tracer_provider_class``: e.g. OpenInference's ``TracerProvider`` (default: the SDK's).
    ``export_spans=False`` leaves the span processor to the instrumentation (Traceloop.init wraps
    ``span_exporter`` in a processor of its own). ``set_global`` makes the providers the global ones.
    """

    def __init__(self, endpoint: str, *, tracer_provider_class: Any = None, export_spans: bool = True,
                 logs: bool = False, set_global: bool = False) -> None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.endpoint = endpoint.rstrip("/")
        self.resource = Resource.create(RESOURCE_ATTRIBUTES)
        self.span_exporter = OTLPSpanExporter(endpoint=f"{self.endpoint}/v1/traces")
        self.tracer_provider = (tracer_provider_class or TracerProvider)(resource=self.resource)
        if export_spans:
            self.tracer_provider.add_span_processor(BatchSpanProcessor(self.span_exporter))
        self.logger_provider: Any = None
        if logs:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

            self.logger_provider = LoggerProvider(resource=self.resource)
            self.logger_provider.add_log_record_processor(
                BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{self.endpoint}/v1/logs")))
        if set_global:
            trace.set_tracer_provider(self.tracer_provider)
            if self.logger_provider is not None:
                from opentelemetry import _logs

                _logs.set_logger_provider(self.logger_provider)
        self.tracer = self.tracer_provider.get_tracer(APP_TRACER, SERVICE_VERSION)

    def shutdown(self) -> None:
        """Flush everything still queued to the collector, then shut the providers down."""
        providers = [p for p in (self.tracer_provider, self.logger_provider) if p is not None]
        for provider in providers:
            provider.force_flush()
        for provider in providers:
            provider.shutdown()

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


# ------------------------------------------------------------------------------------------------
# One request: the app's POST /chat SERVER span and the turn's truth line
# ------------------------------------------------------------------------------------------------


@contextmanager
def chat_request_span(tracer: Any, attributes: dict[str, Any] | None = None) -> Iterator[Any]:
    """The app's ``POST /chat`` SERVER span (``ROOT_SPAN_ATTRIBUTES`` unless ``attributes`` given),
    current inside the block; ``http.response.status_code=200`` when the block completes."""
    from opentelemetry.trace import SpanKind

    attrs = dict(ROOT_SPAN_ATTRIBUTES if attributes is None else attributes)
    with tracer.start_as_current_span(ROOT_SPAN_NAME, kind=SpanKind.SERVER, attributes=attrs) as span:
        yield span
        span.set_attribute("http.response.status_code", 200)


def trace_id_of(span: Any) -> str:
    return format(span.get_span_context().trace_id, "032x")


def system_prompt_of(calls: Sequence[dict[str, Any]]) -> str | None:
    """The system message of the turn's answering (last) chat call, as the fake server got it."""
    messages = (calls[-1].get("messages") or []) if calls else []
    return next((m["content"] for m in messages if m.get("role") == "system"), None)


def emit_turn(args: argparse.Namespace, **fields: Any) -> dict[str, Any]:
    """Write the turn's truth line (``truth.truth_line``) on the real stdout; returns it.

    ``args`` (from ``parse_args``) gives the stack, instrumentation, scenario and conversation id."""
    truth = truth_line(conversation_id=args.conversation_id, stack=args.stack, instrumentation=args.instrumentation,
                       scenario=args.scenario, service=SERVICE_NAME, root_span_name=ROOT_SPAN_NAME, **fields)
    emit(truth, sys.__stdout__)
    return truth


def exchange(question: str, answer: str) -> list[dict[str, str]]:
    """A finished turn as history messages."""
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


class SearchTool:
    """The knowledge-base search (``rag_app.retrieve``) as an agent's tool: call it with the query.

    Remembers the turn's queries and documents for the truth line; ``reset()`` between turns.
    """

    def __init__(self, top_k: int = TOP_K) -> None:
        self.top_k = top_k
        self.queries: list[str] = []
        self.documents: list[dict[str, Any]] = []

    def __call__(self, query: str) -> list[dict[str, Any]]:
        documents = retrieve(query, self.top_k)
        self.queries.append(query)
        self.documents.extend(documents)
        return documents

    def reset(self) -> None:
        self.queries.clear()
        self.documents.clear()

    @property
    def first_query(self) -> str | None:
        return self.queries[0] if self.queries else None


async def agent_conversation(args: argparse.Namespace, tracer: Any, search: SearchTool,
                             answer: Callable[[str], Awaitable[str]],
                             session: Callable[[], ContextManager[Any]] | None = None) -> None:
    """The turns of a tool-calling agent app: ``CONVERSATION_QUESTIONS`` (scenario ``stream``: the
    first one only), each ``await answer(question)`` inside the app's ``POST /chat`` span (inside
    ``session()`` too, when given), then its truth line with what ``search`` was asked and found.
    ``answer`` keeps the framework's own conversation state from turn to turn."""
    calls = ChatCallLog(args.openai_base_url)
    history: list[dict[str, str]] = []  # earlier user/assistant TEXT messages (truth only)
    questions = CONVERSATION_QUESTIONS[:1] if args.scenario == "stream" else CONVERSATION_QUESTIONS
    for question in questions:
        search.reset()
        with session() if session else nullcontext(), chat_request_span(tracer) as root:
            trace_id = trace_id_of(root)
            text = await answer(question)
        turn_calls = calls.since_last()
        emit_turn(args, trace_id=trace_id, question=question, answer=text, history=history,
                  system_prompt=system_prompt_of(turn_calls), documents=list(search.documents),
                  calls=turn_calls, retrieval_query=search.first_query)
        history = history + exchange(question, text)
