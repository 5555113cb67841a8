"""Start an aiohttp application on one TCP address, as the receivers and the admin server do."""

from __future__ import annotations

from typing import Any

from aiohttp import web

__all__ = ["start_site"]


async def start_site(app: web.Application, host: str, port: int, **runner_options: Any) -> tuple[web.AppRunner, int]:
    """Run ``app`` on ``host:port`` (0 = any free port); return the runner and the bound port.

    Signals are left to the CLI and access logs off (one line per OTLP request is noise)."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False, **runner_options)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    return runner, runner.addresses[0][1] if runner.addresses else port
