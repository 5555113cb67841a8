"""One judge budget for the whole fleet: ``judge.tokens_per_minute`` / ``requests_per_minute`` in Redis.

The same promise as the per-process limiter (``monitor.judge.budget``), kept fleet-wide by one
atomic script per attempt: at most N units in any window of ``window_seconds``, a unit counting
from its grant until a window after its attempt finished — as the provider counts it. The
estimate (prompt estimate + the reply's output limit) is charged *before* the call and corrected
to the reported usage after it (or kept when none is reported), exactly like the local limiter,
so no burst of replicas can overfill any 60 s. Entries are scored by the Redis server's clock, so
the replicas' clocks do not matter. An attempt in flight on a replica that dies stays charged
until its deadline plus a window: conservative, never over.

The 429 storm state is shared too: a replica that meets a 429 publishes the end of its pause, and
every replica's next grant waits for it, so one replica's storm pauses the others' calls.

When Redis is away: ``fleet.on_redis_failure: local_share`` grants from a local limiter holding
this replica's share of the budget (1 / the last known fleet size); ``closed`` grants nothing
until Redis answers (the call waits within its deadline, then fails ``budget_exhausted``).
"""

from __future__ import annotations

import asyncio
import itertools
import math
from typing import Literal

from monitor.fleet.link import FleetLink
from monitor.judge.budget import BudgetPermit, JudgeBudget
from monitor.judge.clock import Clock
from monitor.judge.telemetry import JudgeTelemetry, NullJudgeTelemetry
from monitor.judge.types import JudgeError

__all__ = ["FleetJudgeBudget", "FleetPermit"]

# KEYS: tokens zset, tokens hash, requests zset, requests hash, storm. ARGV: id, tokens, token limit (0: none),
# request limit (0: none), window s, in-flight hold s. Returns {granted 1 | 0 wait | -1 never, wait s, storm 0|1}.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local storm = tonumber(redis.call('GET', KEYS[5]) or '0')
if storm > now then return {0, tostring(storm - now), 1} end
local window = tonumber(ARGV[5])
local function wait_for(z, h, amount, limit)
  if limit <= 0 then return 0 end
  if amount > limit then return -1 end
  local old = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'LIMIT', 0, 1000)
  if #old > 0 then
    redis.call('HDEL', h, unpack(old))
    redis.call('ZREM', z, unpack(old))
  end
  local used = 0
  for _, v in ipairs(redis.call('HVALS', h)) do used = used + tonumber(v) end
  local excess = used + amount - limit
  if excess <= 0 then return 0 end
  local entries = redis.call('ZRANGE', z, 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    excess = excess - tonumber(redis.call('HGET', h, entries[i]) or '0')
    if excess <= 0 then return math.max(0.001, tonumber(entries[i + 1]) - now) end
  end
  return window
end
local wt = wait_for(KEYS[1], KEYS[2], tonumber(ARGV[2]), tonumber(ARGV[3]))
local wr = wait_for(KEYS[3], KEYS[4], 1, tonumber(ARGV[4]))
if wt < 0 or wr < 0 then return {-1, '0', 0} end
local w = math.max(wt, wr)
if w > 0 then return {0, tostring(w), 0} end
local hold = tonumber(ARGV[6])
local ttl = math.ceil(hold + window) + 1
if tonumber(ARGV[3]) > 0 then
  redis.call('ZADD', KEYS[1], now + hold, ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
if tonumber(ARGV[4]) > 0 then
  redis.call('ZADD', KEYS[3], now + hold, ARGV[1])
  redis.call('HSET', KEYS[4], ARGV[1], 1)
end
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
return {1, '0', 0}
"""

# KEYS: tokens zset, tokens hash, requests zset, requests hash. ARGV: id, tokens (-1: keep the charge), window s.
_SETTLE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local until_ = now + tonumber(ARGV[3])
for _, z in ipairs({KEYS[1], KEYS[3]}) do
  if redis.call('ZSCORE', z, ARGV[1]) then redis.call('ZADD', z, until_, ARGV[1]) end
end
if tonumber(ARGV[2]) >= 0 and redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1
"""

_CANCEL = """
redis.call('ZREM', KEYS[1], ARGV[1]); redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1]); redis.call('HDEL', KEYS[4], ARGV[1])
return 1
"""

# KEYS[1]: storm key. ARGV[1]: pause seconds. The storm ends at the latest pause any replica announced.
_STORM = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local until_ = now + tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < until_ then
  redis.call('SET', KEYS[1], tostring(until_), 'PX', math.ceil(tonumber(ARGV[1]) * 1000) + 1000)
end
return 1
"""

_MAX_SETTLING = 1024  # settle/cancel calls in flight; past it an entry simply expires at its hold


class FleetPermit:
    """Budget granted fleet-wide to one attempt (the ``monitor.judge.budget.Permit`` contract)."""

    def __init__(self, owner: "FleetJudgeBudget", entry: str, reserved_tokens: int) -> None:
        self._owner = owner
        self._entry = entry
        self._done = False
        self.reserved_tokens = reserved_tokens

    def finish(self, tokens: int | None = None) -> None:
        """The attempt ended: its charge counts a window from now, corrected to ``tokens`` when given."""
        if not self._done:
            self._done = True
            self._owner._later(_SETTLE, self._entry, str(-1 if tokens is None else max(0, tokens)),
                               str(self._owner.window_seconds))

    def cancel(self) -> None:
        """The attempt was never sent: give the grant back."""
        if not self._done:
            self._done = True
            self._owner._later(_CANCEL, self._entry)


class FleetJudgeBudget:
    """The fleet's requests- and tokens-per-minute limits (see the module doc)."""

    def __init__(self, link: FleetLink, *, requests_per_minute: int | None, tokens_per_minute: int | None,
                 on_exhausted: Literal["wait", "shed"], max_wait_seconds: float | None, clock: Clock,
                 telemetry: JudgeTelemetry | None = None, window_seconds: float = 60.0) -> None:
        self._link = link
        self._rpm = requests_per_minute
        self._tpm = tokens_per_minute
        self._on_exhausted = on_exhausted
        self._max_wait = max_wait_seconds
        self._clock = clock
        self._telemetry = telemetry or NullJudgeTelemetry()
        self.window_seconds = window_seconds
        self._ids = itertools.count(1)
        self._keys = [link.key("judge", part) for part in ("tokens:z", "tokens:h", "requests:z", "requests:h")]
        self._storm_key = link.key("judge", "storm")
        self._settling: set[asyncio.Task[None]] = set()
        self._local: tuple[int, JudgeBudget] | None = None

    @property
    def limited(self) -> bool:
        return bool(self._rpm or self._tpm)

    async def acquire(self, tokens: int, deadline: float, wake: asyncio.Event) -> BudgetPermit:
        """One request and ``tokens`` tokens from the fleet's budget, waiting as configured; raise
        ``JudgeError("budget_exhausted")`` when they do not fit in time or ``wake`` is set."""
        start = self._clock.now()
        limit_at = start if self._on_exhausted == "shed" else (
            deadline if self._max_wait is None else min(deadline, start + self._max_wait))
        blocked_by = ""
        while True:
            if not self._link.healthy:
                if self._link.config.on_redis_failure == "local_share":
                    return await self._local_share().acquire(tokens, deadline, wake)
                await self._wait_for_redis(limit_at, wake)
                continue
            entry = f"{self._link.replica_id}:{next(self._ids)}"
            hold = max(0.0, deadline - self._clock.now()) + self.window_seconds
            reply = await self._link.script(
                _ACQUIRE, [*self._keys, self._storm_key],
                [entry, str(tokens), str(self._tpm or 0), str(self._rpm or 0), str(self.window_seconds), f"{hold:.3f}"])
            if reply is None:
                continue  # the link is degraded now: the failure mode decides
            granted, wait, storm = int(reply[0]), float(reply[1]), int(reply[2])
            if granted == 1:
                if blocked_by:
                    self._telemetry.budget_waited(blocked_by, self._clock.now() - start)
                return FleetPermit(self, entry, tokens)
            limiter = "rate_limit" if storm else ("tokens" if self._tpm else "requests")
            if granted < 0 or self._clock.now() + wait > limit_at:
                self._telemetry.budget_shed(limiter)
                raise JudgeError("budget_exhausted", f"fleet judge {limiter} budget exhausted"
                                 + (" (request larger than the budget)" if granted < 0 else ""))
            blocked_by = limiter
            if not await self._clock.sleep(wait, wake):
                raise JudgeError("budget_exhausted", "judge client is shutting down")

    async def _wait_for_redis(self, limit_at: float, wake: asyncio.Event) -> None:
        """``closed``: no judge call while Redis is away; wait for it within the call's limit."""
        while not self._link.healthy:
            left = limit_at - self._clock.now()
            if left <= 0:
                self._telemetry.budget_shed("fleet")
                raise JudgeError("budget_exhausted", "fleet judge budget unavailable: Redis is away "
                                                     "(fleet.on_redis_failure: closed)")
            if not await self._clock.sleep(min(0.2, left), wake):
                raise JudgeError("budget_exhausted", "judge client is shutting down")

    def _local_share(self) -> JudgeBudget:
        """``local_share``: this replica's share of the budget, for as long as Redis is away."""
        size = self._link.fleet_size
        if self._local is None or self._local[0] != size:
            self._local = (size, JudgeBudget(
                requests_per_minute=math.ceil(self._rpm / size) if self._rpm else None,
                tokens_per_minute=math.ceil(self._tpm / size) if self._tpm else None,
                on_exhausted=self._on_exhausted, max_wait_seconds=self._max_wait, clock=self._clock,
                telemetry=self._telemetry, window_seconds=self.window_seconds))
        return self._local[1]

    def rate_limited(self, pause_seconds: float) -> None:
        """A 429 paused this replica for ``pause_seconds``: pause the fleet's grants as long."""
        if pause_seconds > 0:
            self._later_keys(_STORM, [self._storm_key], f"{pause_seconds:.3f}")

    def _later(self, script: str, *args: str) -> None:
        self._later_keys(script, self._keys, *args)

    def _later_keys(self, script: str, keys: list[str], *args: str) -> None:
        if len(self._settling) >= _MAX_SETTLING:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._link.script(script, keys, args))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def flush(self) -> None:
        """Wait for the settlements still in flight (shutdown)."""
        if self._settling:
            await asyncio.gather(*list(self._settling), return_exceptions=True)

