"""The status page at ``/`` on the admin server: one static HTML document, no build step.

The page holds no conversation text: its script fetches ``/api/summary``, ``/api/pipeline``,
``/api/regressions``, ``/api/releases`` and ``/api/turns`` (the same access rules as any API client) and builds the DOM with ``textContent`` only, so a hostile
question or judge reason stays text. A token given in the URL fragment (``/#token=…``, never the
query string: fragments are not sent to servers or logged) is kept in ``sessionStorage``, removed
from the address bar and sent as ``Authorization: Bearer``; on a 401 the page asks for it.
With a review token configured (``admin.review_token``) the page ends with a review view
(``/api/review``): the reviewer types that token and an id, kept in the tab's memory only, and
agrees, disagrees or gives a value per judged turn (``POST /api/feedback``).
``/#metric=<id>`` preselects the worst-turns filter (the page keeps it there as it changes).
Times are shown in the browser's time zone, named on the page.

Read in ten seconds by whoever is on call: an incident banner at the top (each active regression
and each release worse than the one before, with its interval, the label values that carry it and
the runbook; "no spans for N s" when traffic stopped), metrics that are off collapsed to one line,
trend charts on one time axis and one y-scale for all metrics, the release comparison, and the
route, model and version on every turn card. An endpoint that answers 404 (a monitor without
release tracking) hides its part of the page.

The Content-Security-Policy admits only this document's own script and style (by SHA-256 hash)
and connections to its own origin. Elements carry stable ``data-*`` attributes
(``data-metric``, ``data-window``, ``data-field``) for tests and scrapers. Number formats: rates
``(x*100).toFixed(1) + "%"``, means ``toFixed(2)``, "no data" when a window has no scored turn.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources

from aiohttp import web

__all__ = ["PAGE_HTML", "CONTENT_SECURITY_POLICY", "REFRESH_SECONDS", "page_response"]

REFRESH_SECONDS = 10

def _asset(name: str) -> str:
    return resources.files("monitor.admin").joinpath(name).read_text(encoding="utf-8")


# Package files, read once at import: the CSP hashes must match the bytes served.
_STYLE = _asset("status.css")
# One inline script (one CSP hash) built from small files, in dependency order.
_SCRIPT_PARTS = ("status_common.js", "status_chart.js", "status_pipeline.js", "status_metrics.js",
                 "status_incidents.js", "status_releases.js", "status_turns.js", "status_agreement.js",
                 "status.js",
                 # After the page's loop: it loads the queue once status.js has read the token.
                 "status_review.js")
_SCRIPT = "\n".join(_asset(name) for name in _SCRIPT_PARTS).replace("__REFRESH_MS__", str(REFRESH_SECONDS * 1000))
_BODY = _asset("status_body.html")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src {_sha256(_SCRIPT)}; style-src {_sha256(_STYLE)}; "
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

PAGE_HTML = (
    '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    '<meta name="referrer" content="no-referrer">\n'
    '<link rel="icon" href="data:,">\n<title>rag-monitor status</title>\n'
    f"<style>{_STYLE}</style>\n</head>\n<body>\n{_BODY}<script>{_SCRIPT}</script>\n</body>\n</html>\n"
)

_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def page_response() -> web.Response:
    """The page with its security headers (a fresh response each time: aiohttp sends it once)."""
    return web.Response(text=PAGE_HTML, content_type="text/html", charset="utf-8", headers=_HEADERS)
