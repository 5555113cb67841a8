"""The replica's one connection to the fleet's Redis, and what it knows of the fleet's health.

Every Redis operation goes through :meth:`FleetLink.run`, which bounds it by
``fleet.timeout_seconds``: slower counts as down, exactly like a refused connection. The first
failure of a kind marks the link *degraded* with that cause (logged once per cause, counted every
time); a background task then pings until Redis answers and marks it healthy again (logged once).
Callers never see an exception from the link: they get ``None`` and fall back to what
``fleet.on_redis_failure`` says.

The link also keeps the replica's heartbeat (a sorted set of replica ids scored by the Redis
server's clock), from which :attr:`FleetLink.fleet_size` — the replicas seen within three
heartbeats — is read. The last size seen survives an outage: ``local_share`` divides budgets by it
(by ``fleet.replicas_hint`` when none was ever seen). A busy replica's heartbeat rides on its
decision scripts (:meth:`FleetLink.heartbeat_rider`, :data:`HEARTBEAT_LUA`); the heartbeat task
only beats on its own when none rode for a whole period: each round trip costs the sidecar CPU.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Sequence, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from monitor.fleet.config import FleetConfig
from monitor.telemetry import Telemetry, counter

__all__ = ["FleetLink", "FLEET_REDIS_ERRORS", "FLEET_DEGRADED_EVENTS", "HEARTBEAT_LUA"]

log = logging.getLogger(__name__)

T = TypeVar("T")

FLEET_REDIS_ERRORS = counter(
    "rag_monitor_fleet_redis_errors_total",
    "Redis operations of the fleet that failed or took longer than fleet.timeout_seconds, by cause "
    "(timeout | connection | error).", "cause")
FLEET_DEGRADED_EVENTS = counter(
    "rag_monitor_fleet_outages_total",
    "Times the fleet link went down (Redis unreachable or slow): the replica then follows "
    "fleet.on_redis_failure until Redis answers again.", "cause")

# Heartbeats older than this many periods do not count toward the fleet size.
_ALIVE_PERIODS = 3.0

HEARTBEAT_LUA = """
local function heartbeat(key, replica, alive_seconds)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
  redis.call('ZADD', key, now, replica)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - tonumber(alive_seconds))
  redis.call('PEXPIRE', key, math.ceil(tonumber(alive_seconds) * 2000))
  return {redis.call('ZCARD', key), tostring(now)}
end
"""
"""A Lua function ``heartbeat(key, replica, alive_seconds)`` returning ``{replicas alive, server time}``:
prepended to any script that carries the heartbeat (see :meth:`FleetLink.heartbeat_rider`)."""

_HEARTBEAT = HEARTBEAT_LUA + "return heartbeat(KEYS[1], ARGV[1], ARGV[2])\n"


class FleetLink:
    """A bounded, self-healing Redis client for one replica (``start``/``shutdown`` component)."""

    def __init__(self, config: FleetConfig, telemetry: Telemetry, *,
                 password: str | None = None,
                 client_factory: Callable[[], aioredis.Redis] | None = None) -> None:
        if not config.enabled:
            raise ValueError("fleet.redis_url is not set")
        self.config = config
        self.replica_id = config.replica()
        self._telemetry = telemetry
        self._password = password
        self._factory = client_factory or self._default_client
        self._client: aioredis.Redis | None = None
        self._cause: str | None = None  # why the link is degraded; None while healthy
        self._degraded_since: float | None = None
        self._logged_causes: set[str] = set()
        self._healer: asyncio.Task[None] | None = None
        self._heart: asyncio.Task[None] | None = None
        self._fleet_size: int | None = None
        self._server_offset = 0.0  # Redis server clock minus ours, from the last heartbeat
        self._last_beat = -float("inf")  # monotonic time of the last heartbeat Redis answered
        self._on_recovery: list[Callable[[], Awaitable[None]]] = []
        self._scripts: dict[str, tuple[aioredis.Redis, Any]] = {}

    def _default_client(self) -> aioredis.Redis:
        timeout = self.config.timeout_seconds
        # Every operation is bounded by run()'s own timeout (and ping/zrem by theirs): a socket
        # timeout on top would wrap each read in one more timer, ~70 us of CPU a call for nothing.
        kwargs: dict[str, Any] = {"socket_timeout": None, "socket_connect_timeout": timeout,
                                  "health_check_interval": 0, "retry_on_timeout": False,
                                  "decode_responses": True}
        if self._password is not None:
            kwargs["password"] = self._password
        return aioredis.Redis.from_url(self.config.url(), **kwargs)

    # -- state -----------------------------------------------------------------------------

    def key(self, *parts: str) -> str:
        """A key under ``fleet.key_prefix`` (one Redis can serve several monitors)."""
        return ":".join((self.config.key_prefix, *parts))

    @property
    def healthy(self) -> bool:
        return self._cause is None and self._client is not None

    @property
    def degraded_cause(self) -> str | None:
        """``timeout`` | ``connection`` | ``error`` while Redis is away, else None."""
        return self._cause

    @property
    def degraded_seconds(self) -> float:
        return 0.0 if self._degraded_since is None else time.monotonic() - self._degraded_since

    @property
    def fleet_size(self) -> int:
        """Replicas alive at the last heartbeat; the last known size (or the hint) while degraded."""
        return self._fleet_size or self.config.replicas_hint

    def server_time(self) -> float:
        """Our estimate of the Redis server's clock (Unix seconds)."""
        return time.time() + self._server_offset

    def on_recovery(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` each time Redis answers again after an outage (e.g. to write back the
        decisions taken alone meanwhile)."""
        self._on_recovery.append(callback)

    # -- operations ------------------------------------------------------------------------

    async def script(self, text: str, keys: Sequence[str], args: Sequence[str]) -> Any:
        """Run a server-side script by its SHA (``EVALSHA``; loaded again after a Redis restart):
        the script's text is not sent with every call. None when Redis fails, as :meth:`run`."""
        return await self.run(lambda r: self._registered(r, text)(keys=list(keys), args=list(args)))

    def _registered(self, client: aioredis.Redis, text: str) -> Any:
        found = self._scripts.get(text)
        if found is None or found[0] is not client:
            found = self._scripts[text] = (client, client.register_script(text))
        return found[1]

    async def run(self, operation: Callable[[aioredis.Redis], Awaitable[T]]) -> T | None:
        """``operation(client)`` within ``fleet.timeout_seconds``; None (counted, link degraded)
        when Redis fails or is slow, and at once while the link is degraded."""
        client = self._client
        if client is None or self._cause is not None:
            return None
        try:
            async with asyncio.timeout(self.config.timeout_seconds):
                return await operation(client)
        except TimeoutError:
            self._failed("timeout", "no answer within fleet.timeout_seconds")
        except (ConnectionError, OSError) as exc:
            self._failed("connection", str(exc))
        except RedisError as exc:
            name = type(exc).__name__
            self._failed("connection" if "Connection" in name else "error", f"{name}: {exc}")
        return None

    def _failed(self, cause: str, detail: str) -> None:
        self._telemetry.add(FLEET_REDIS_ERRORS, cause=cause)
        if self._cause is not None:
            return
        self._cause = cause
        self._degraded_since = time.monotonic()
        self._telemetry.add(FLEET_DEGRADED_EVENTS, cause=cause)
        mode = self.config.on_redis_failure
        if cause not in self._logged_causes:
            self._logged_causes.add(cause)
            log.error("fleet: Redis at %s is unavailable (%s: %s); following on_redis_failure=%s until it "
                      "answers", self.config.display_url(), cause, detail, mode)
        if self._healer is None or self._healer.done():
            self._healer = asyncio.get_running_loop().create_task(self._heal(), name="rag-monitor-fleet-heal")

    async def _heal(self) -> None:
        delay = min(0.2, self.config.timeout_seconds)
        while self._client is not None and self._cause is not None:
            await asyncio.sleep(delay)
            client = self._client
            if client is None:
                return
            try:
                async with asyncio.timeout(self.config.timeout_seconds):
                    await client.ping()
            except (TimeoutError, ConnectionError, OSError, RedisError):
                delay = min(2.0, delay * 1.5)
                continue
            outage = self.degraded_seconds
            self._cause, self._degraded_since = None, None
            log.warning("fleet: Redis at %s answers again after %.1f s; shared decisions and budgets resume",
                        self.config.display_url(), outage)
            await self._beat()
            for callback in self._on_recovery:
                try:
                    await callback()
                except Exception:  # a write-back that fails now is retried at the next recovery
                    log.exception("fleet: catching up after the outage failed")

    # -- heartbeat -------------------------------------------------------------------------

    def heartbeat_rider(self) -> tuple[str, list[str]] | None:
        """``(key, [replica, alive_seconds])`` for a script to call ``heartbeat`` with when half a
        period has passed since the last beat (else None); its reply goes to :meth:`heartbeat_answered`."""
        if time.monotonic() - self._last_beat < self.config.heartbeat_seconds / 2:
            return None
        return self.key("replicas"), [self.replica_id, str(self.config.heartbeat_seconds * _ALIVE_PERIODS)]

    def heartbeat_answered(self, reply: Any) -> None:
        """Take a heartbeat's reply (``{replicas alive, server time}``), from any script."""
        try:
            size, server_now = max(1, int(reply[0])), float(reply[1])
        except (TypeError, ValueError, IndexError):
            return
        self._fleet_size = size
        self._server_offset = server_now - time.time()
        self._last_beat = time.monotonic()

    async def _beat(self) -> None:
        key, args = self.key("replicas"), [self.replica_id, str(self.config.heartbeat_seconds * _ALIVE_PERIODS)]
        reply = await self.script(_HEARTBEAT, [key], args)
        if reply is not None:
            self.heartbeat_answered(reply)

    async def _heartbeat(self) -> None:
        period = self.config.heartbeat_seconds
        while True:
            # A beat that rode on a decision script within the period stands for this one.
            since = time.monotonic() - self._last_beat
            if since >= period * 0.95:
                await self._beat()
                await asyncio.sleep(period)
            else:
                await asyncio.sleep(period - since)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and say hello; an unreachable Redis does not fail the start (degraded instead)."""
        if self._client is not None:
            return
        self._client = self._factory()
        self._cause = None
        await self._beat()
        if self._cause is None:
            log.info("fleet: replica %s joined through Redis at %s (%d replicas alive)", self.replica_id,
                     self.config.display_url(), self.fleet_size)
        self._heart = asyncio.create_task(self._heartbeat(), name="rag-monitor-fleet-heartbeat")

    async def shutdown(self, deadline: float | None = None) -> None:
        """Leave the fleet (best effort) and close the connection pool. Safe twice."""
        tasks = [t for t in (self._heart, self._healer) if t is not None]
        self._heart = self._healer = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        client, self._client = self._client, None
        if client is None:
            return
        if self._cause is None:
            try:
                async with asyncio.timeout(self.config.timeout_seconds):
                    await client.zrem(self.key("replicas"), self.replica_id)
            except (TimeoutError, ConnectionError, OSError, RedisError):
                pass
        await client.aclose()
