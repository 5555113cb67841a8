"""The shell commands of the README and of the getting-started page, run word for word.

- ``pip install …`` blocks are install lines (``<!-- install:NAME -->``), each built in a fresh
  venv by ``.ci/run`` and tested by ``tests/test_readme_install.py``;
- ``bash .ci/run`` is the command CI runs (this test suite is its last step);
- the quick-start line: ``.ci/run`` runs its setup in a fresh copy of the work tree
  (``tests/docs/quickstart.py``), this test its final ``rag-monitor serve`` there;
- the first-hour server with a judge runs from the repository, with the venv ``.ci/run`` made.

A server is run until ``/readyz`` answers and its start-up log says what runs, then stopped with
SIGTERM (exit 0). Ports and the store file are moved by ``RAG_MONITOR_…`` variables so a busy
port on the machine cannot fail the test; the command's words are unchanged.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

import aiohttp
import pytest

from tests.docs.quickstart import COPY, README, STAMP, quickstart_line, setup_and_serve, shell_blocks
from tests.readme_install import install_lines

ROOT = Path(__file__).resolve().parents[2]
PAGES = (README, ROOT / "docs" / "getting-started.md")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _is_serve(block: str) -> bool:
    return block.replace("\\\n", " ").split()[-2:] == ["rag-monitor", "serve"] or block.endswith("rag-monitor serve")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_shell_block_is_one_the_tests_run(page: Path) -> None:
    installs = {" ".join(args) for args in install_lines(page.read_text(encoding="utf-8")).values()}
    for block in shell_blocks(page):
        words = block.replace("\\\n", " ").split()
        if words[:2] == ["pip", "install"]:
            assert " ".join(words[2:]) in installs, f"{page.name}: an install line without <!-- install:NAME -->"
        elif block == "bash .ci/run":
            assert (ROOT / ".ci" / "run").is_file()
        else:
            assert _is_serve(block), f"{page.name}: no test runs this command: {block}"


def test_the_getting_started_page_shows_the_readme_quick_start() -> None:
    assert quickstart_line(PAGES[1]) == quickstart_line(README)


async def _serve(block: str, cwd: Path, tmp_path: Path) -> str:
    admin = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_MONITOR_", "OPENAI_", "VIRTUAL_ENV"))}
    env.update(RAG_MONITOR_RECEIVERS__HTTP__PORT=str(_free_port()), RAG_MONITOR_RECEIVERS__GRPC__PORT=str(_free_port()),
               RAG_MONITOR_ADMIN__PORT=str(admin),
               RAG_MONITOR_EXPORTERS__STORE__PATH=str(tmp_path / "results.sqlite3"))
    # bash runs a lone command (env assignments included) by exec: the signal reaches the server.
    proc = await asyncio.create_subprocess_exec("bash", "-c", block, cwd=cwd, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(300):
                try:
                    async with session.get(f"http://127.0.0.1:{admin}/readyz") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                assert proc.returncode is None, (await proc.stderr.read()).decode()[-3000:] if proc.stderr else ""
                await asyncio.sleep(0.1)
            else:
                pytest.fail("the server never became ready")
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    log = err.decode()
    assert proc.returncode == 0, log[-3000:]
    return log


async def test_the_quick_start_line_serves_on_its_defaults(tmp_path: Path) -> None:
    if not (COPY / STAMP).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{COPY} is missing: .ci/run builds it with `python -m tests.docs.quickstart build`")
        pytest.skip("build it first: python -m tests.docs.quickstart build (needs PyPI)")
    _, serve = setup_and_serve(quickstart_line())
    log = await _serve(serve, COPY, tmp_path)
    assert "judge: off" in log and "rag-monitor ready" in log


async def test_the_first_hour_server_with_a_judge_starts(tmp_path: Path) -> None:
    if not (ROOT / ".venv" / "bin" / "rag-monitor").exists():
        pytest.skip("the first hour runs .venv/bin/rag-monitor: .ci/run (or the quick start) creates it")
    (block,) = {b for page in PAGES for b in shell_blocks(page) if _is_serve(b) and "JUDGE" in b}
    log = await _serve(block, ROOT, tmp_path)
    assert "judge: gpt-4o-mini at https://api.openai.com/v1" in log
    # The start-up log the page shows is the one this command writes (receivers and outputs name
    # the ports and the store file, which this test moves).
    page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    shown = [ln.strip().removeprefix("INFO monitor.app: ") for ln in page.splitlines() if "INFO monitor.app: " in ln]
    assert len(shown) == 6
    for line in shown:
        if not line.startswith(("receivers:", "outputs:")):
            assert f"INFO monitor.app: {line}\n" in log, f"getting-started.md shows a start-up line the server no longer writes: {line}"
