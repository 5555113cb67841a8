"""The admin server lives on its own thread: health and metrics answer while the pipeline's event
loop is busy or wedged, and liveness tells a wedged pipeline from a busy one."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request

from tests.support.pipeline import running_sidecar, test_config


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_health_and_metrics_answer_while_the_pipeline_loop_is_blocked():
    config = test_config().model_copy(update={"admin": test_config().admin.model_copy(
        update={"liveness_stall_seconds": 0.5})})
    async with running_sidecar(config) as (sc, _):
        base = f"http://127.0.0.1:{sc.admin.port}"
        seen: dict[str, object] = {}
        done = threading.Event()

        def probe() -> None:
            try:
                seen["first"] = _get(f"{base}/healthz")
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:  # the stall grows while the loop is blocked
                    status, body = _get(f"{base}/healthz")
                    if status == 503:
                        seen["stalled"] = (status, body)
                        break
                seen["metrics"] = _get(f"{base}/metrics")[0]
            finally:
                done.set()

        threading.Thread(target=probe, daemon=True).start()
        # Block the pipeline's loop the way a wedged stage would, until the probe is through.
        assert done.wait(15)
        assert seen["first"][0] == 200
        status, body = seen["stalled"]
        assert "stalled" in body
        assert seen["metrics"] == 200

        async def healthy_again() -> None:
            while (await asyncio.to_thread(_get, f"{base}/healthz"))[0] != 200:
                await asyncio.sleep(0.1)

        await asyncio.wait_for(healthy_again(), 10)
