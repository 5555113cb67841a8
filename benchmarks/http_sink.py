"""A trivial aiohttp server that reads each POST body and answers 200: the HTTP-only ceiling.

Used by ``benchmarks/ingest.py`` to show what the same load costs before any decoding happens.
"""

from __future__ import annotations

import sys

from aiohttp import web


async def sink(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=b"", content_type="application/x-protobuf")


def main() -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/traces", sink)
    app.router.add_get("/readyz", lambda r: web.Response(text="ok"))  # type: ignore[arg-type,return-value]
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)


if __name__ == "__main__":
    main()
