"""Headless Chromium's ``--dump-dom`` run off the event loop, and a tiny DOM from ``html.parser``."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list["Node | str"] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def iter(self) -> Iterator["Node"]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list["Node"]:
        """Descendants (and self) with ``tag`` and every attribute given (``data_x`` = ``data-x``)."""
        wanted = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [n for n in self.iter() if (tag is None or n.tag == tag)
                and all(n.attrs.get(k) == v for k, v in wanted.items())]

    def one(self, tag: str | None = None, **attrs: str) -> "Node":
        found = self.find_all(tag, **attrs)
        assert len(found) == 1, f"expected one {tag} {attrs}, found {len(found)}"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self._stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self._stack[-1].children.append(node)
        if tag not in _VOID:
            self._stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._stack) - 1, 0, -1):
            if self._stack[i].tag == tag:
                del self._stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self._stack[-1].children.append(data)


def parse(html: str) -> Node:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


@dataclass
class Page:
    dom: Node
    console: list[str]  # console messages, uncaught errors and CSP refusals


async def dump_dom(url: str, profile: Path, timeout: float = 60.0, *, time_zone: str | None = None,
                   screenshot: Path | None = None) -> Page:
    """Load ``url`` in headless Chromium, let its fetches finish (virtual time), parse the DOM.
    ``time_zone`` sets the browser's zone (``TZ``); ``screenshot`` also saves a PNG of the page."""
    env = {**os.environ, **({"TZ": time_zone} if time_zone else {})}
    shot = [f"--screenshot={screenshot}", "--window-size=1400,2000", "--hide-scrollbars"] if screenshot else []
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0",
        *shot, "--dump-dom", url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    console = [line for line in err.decode(errors="replace").splitlines() if ":CONSOLE" in line]
    return Page(parse(out.decode()), console)
