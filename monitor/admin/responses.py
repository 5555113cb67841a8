"""What every admin route answers with: JSON bodies, error documents, and the read-token check.

One place, so that ``/api/*``, ``/api/feedback`` and ``/api/review`` refuse a request the same way
(status, ``WWW-Authenticate``, the ``requests_rejected`` count) and never cache a document.
"""

from __future__ import annotations

from typing import Mapping

from aiohttp import web

from monitor.admin.api import decide_access, encode_json
from monitor.telemetry import REQUESTS_REJECTED, Telemetry

__all__ = ["TRANSPORT", "json_response", "error_response", "rejected", "read_refusal"]

TRANSPORT = "admin"  # the transport label of requests_rejected


def json_response(body: bytes, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    """An encoded JSON document, never cached, never sniffed."""
    return web.Response(body=body, status=status, content_type="application/json", charset="utf-8",
                        headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
                                 **(headers or {})})


def error_response(status: int, message: str, parameter: str | None = None,
                   headers: Mapping[str, str] | None = None) -> web.Response:
    """``{"error": message[, "parameter": name]}`` with ``status``."""
    document = {"error": message} if parameter is None else {"error": message, "parameter": parameter}
    return json_response(encode_json(document), status, headers)


def rejected(telemetry: Telemetry | None, reason: str) -> None:
    """Count a refused request (``rag_monitor_requests_rejected_total{transport="admin"}``)."""
    if telemetry is not None:
        telemetry.add(REQUESTS_REJECTED, transport=TRANSPORT, reason=reason)


def read_refusal(request: web.Request, token: bytes | None, telemetry: Telemetry | None) -> web.Response | None:
    """The response refusing a request that may not read conversation text (counted), or None."""
    decision = decide_access(remote=request.remote, host=request.headers.get("Host"),
                             authorization=request.headers.get("Authorization"), token=token)
    if decision.allowed:
        return None
    rejected(telemetry, decision.reason)
    headers = {"WWW-Authenticate": 'Bearer realm="rag-monitor"'} if decision.status == 401 else None
    return error_response(decision.status, decision.message, headers=headers)
