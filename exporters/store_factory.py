"""Builds the result store that ``exporters.store`` names: the embedded SQLite file (``path``, or
``url: sqlite:///…``) for one process, or PostgreSQL (``url: postgresql://…``) for a fleet."""

from __future__ import annotations

import time
from typing import Callable

from exporters.config import StoreConfig
from exporters.result_store import ResultStore
from exporters.store_postgres import PostgresStore
from monitor.telemetry import Telemetry

__all__ = ["build_store", "Store"]

Store = ResultStore | PostgresStore


def build_store(config: StoreConfig, telemetry: Telemetry, *, replica_id: str,
                clock: Callable[[], float] = time.time) -> Store:
    """The store for ``config.dialect``. ``replica_id`` names this process in the fleet's backlog
    (PostgreSQL; unused by SQLite, whose file belongs to one process). Nothing is opened here:
    ``start()`` does that."""
    if config.dialect == "postgresql":
        return PostgresStore(config, telemetry, clock, replica_id=replica_id)
    return ResultStore(config, telemetry, clock)
