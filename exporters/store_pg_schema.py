"""The PostgreSQL store's schema migration: the tables of :mod:`exporters.store_schema` rendered
for PostgreSQL, applied in one transaction under an advisory lock, so that replicas starting
together migrate once (the others wait for the lock, then find the schema current).

The version lives in ``rag_monitor_schema`` (one row); PostgreSQL's DDL is transactional, so a
replica killed mid-migration leaves the previous version intact.
"""

from __future__ import annotations

import psycopg

from exporters.result_store import StoreOpenError
from exporters.store_schema import SCHEMA_VERSION, migrations

__all__ = ["migrate", "MIGRATION_LOCK"]

MIGRATION_LOCK = 0x7261676D6F6E00  # pg_advisory_xact_lock key ("ragmon", 0)
_MIGRATIONS = migrations("postgresql")
_VERSION_TABLE = ("CREATE TABLE IF NOT EXISTS rag_monitor_schema ("
                  "singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton), version INTEGER NOT NULL)")


async def migrate(conn: psycopg.AsyncConnection[tuple[object, ...]]) -> int | None:
    """Bring the database to :data:`SCHEMA_VERSION`; returns the version found when it migrated,
    None when it was current. :class:`StoreOpenError` for a newer schema (another release)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute(_VERSION_TABLE)
        row = await (await conn.execute("SELECT version FROM rag_monitor_schema")).fetchone()
        found = int(str(row[0])) if row else 0
        if found == SCHEMA_VERSION:
            return None
        if found not in _MIGRATIONS:
            raise StoreOpenError(f"exporters.store.url: schema version {found} is not {SCHEMA_VERSION} (written by "
                                 "another rag-monitor version); use another database")
        for statement in _MIGRATIONS[found]:
            await conn.execute(statement)
        await conn.execute("INSERT INTO rag_monitor_schema (version) VALUES (%s) ON CONFLICT (singleton) "
                           "DO UPDATE SET version = EXCLUDED.version", (SCHEMA_VERSION,))
    return found
