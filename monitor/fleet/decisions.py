"""One sampling decision per conversation for the whole fleet: the first replica to decide wins.

The evaluation stage hands each assembled turn to :meth:`FleetDecider.submit`, which never waits:
a conversation this replica already knows is delivered at once from the sampling stage's cache;
any other goes into a bounded queue. A task takes the queue in batches and settles each batch in
at most two Redis round trips:

1. **lookup** (one script): the stored decision of every conversation in the batch, its TTL
   refreshed (a decision lives as long as its conversation keeps talking);
2. **propose** (one script), for the conversations nobody has decided: this replica draws with its
   own policy tree (probabilities from the fleet's arrivals) and proposes; the script stores each
   proposal with ``SET NX`` and counts the fleet's arrivals and post-stratification cells for the
   proposals that won. A proposal that lost a race (another replica decided between the two round
   trips) is replaced by the winner's decision and counted.

When Redis is away (``FleetLink`` degraded) the batch is decided here alone, weighted by this
replica's own counts (``L`` cells), and those decisions are written back with ``SET NX`` when Redis
answers again, so the conversation's later turns elsewhere follow them. Overload (the queue full)
decides locally too, counted: an accepted turn is never dropped for want of a decision.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict, deque
from dataclasses import replace
from typing import Callable

from monitor.fleet.link import FleetLink
from monitor.fleet.traffic import TRAFFIC_TTL_SECONDS, FleetTraffic
from monitor.model import SamplingDecision, Turn
from monitor.telemetry import Telemetry, counter
from samplers.base import conversation_key
from samplers.stage import SamplingStage
from samplers.weighting import FLEET, cell_id

__all__ = ["FleetDecider", "FLEET_DECISIONS", "Deliver"]

log = logging.getLogger(__name__)

Deliver = Callable[[Turn, SamplingDecision], None]

FLEET_DECISIONS = counter(
    "rag_monitor_fleet_decisions_total",
    "Sampling decisions of conversations this replica saw a first turn of, by source: fleet (another replica's "
    "decision adopted), own (this replica's proposal stored for the fleet), race (proposal lost, the winner "
    "adopted), local (decided alone: Redis away), overload (decided alone: queue full), written_back (a decision "
    "taken alone stored for the fleet once Redis answered).", "source")

_BATCH = 512
# How long a batch gathers the rest of a burst: short while batches are large; doubled after each
# small one up to fleet.max_batch_wait_seconds (a quiet replica would otherwise pay two round trips
# for every few conversations: the fleet's cost follows round trips, benchmarks/README-fleet.md).
_GATHER_SECONDS = 0.02
_SMALL_BATCH = 16
_SEP = "\x1f"

# KEYS: decision keys. ARGV[1]: TTL in ms. Returns each stored decision or "" (none), TTL refreshed.
_LOOKUP = """
local out = {}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    redis.call('PEXPIRE', KEYS[i], ARGV[1])
    out[i] = v
  else
    out[i] = ''
  end
end
return out
"""

# KEYS[1]: the interval's traffic hash; KEYS[2..]: decision keys. ARGV[1]: TTL ms; ARGV[2]: traffic TTL s;
# then per proposal: decision JSON, cell ("" when 1/p is final), outcome, nodes joined by \\31.
# Returns "" where the proposal won, else the decision already stored.
_PROPOSE = """
local out = {}
local traffic = KEYS[1]
for i = 2, #KEYS do
  local base = 3 + (i - 2) * 4
  local existing = redis.call('GET', KEYS[i])
  if existing then
    out[i - 1] = existing
  else
    redis.call('SET', KEYS[i], ARGV[base], 'PX', ARGV[1])
    out[i - 1] = ''
    local cell = ARGV[base + 1]
    local outcome = ARGV[base + 2]
    if cell ~= '' then
      redis.call('HINCRBY', traffic, 'c|' .. cell .. '|a', 1)
      if outcome ~= 'not_sampled' then redis.call('HINCRBY', traffic, 'c|' .. cell .. '|s', 1) end
      if outcome == 'sampled' then redis.call('HINCRBY', traffic, 'c|' .. cell .. '|k', 1) end
    end
    for node in string.gmatch(ARGV[base + 3], '[^\\031]+') do
      redis.call('HINCRBY', traffic, 'n|' .. node, 1)
    end
  end
end
redis.call('EXPIRE', traffic, ARGV[2])
return out
"""

# KEYS: decision keys; ARGV[1]: TTL ms; ARGV[2..]: decisions. SET NX each (write-back after an outage).
_WRITE_BACK = """
local stored = 0
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[i + 1], 'PX', ARGV[1], 'NX') then stored = stored + 1 end
end
return stored
"""


def encode_decision(decision: SamplingDecision) -> str:
    return json.dumps({"s": decision.sampled, "pol": decision.policy, "p": decision.probability,
                       "c": decision.cell}, separators=(",", ":"))


def decode_decision(text: str) -> SamplingDecision | None:
    try:
        data = json.loads(text)
        cell = data.get("c")
        return SamplingDecision(bool(data["s"]), str(data["pol"]), float(data["p"]),
                                str(cell) if cell is not None else None)
    except (ValueError, KeyError, TypeError):
        return None


class FleetDecider:
    """Batches first-turn decisions through Redis (see the module doc); ``start``/``shutdown``."""

    def __init__(self, stage: SamplingStage, link: FleetLink, traffic: FleetTraffic, telemetry: Telemetry, *,
                 ttl_seconds: float, max_pending: int, max_pending_bytes: int = 64 * 1024 * 1024,
                 max_batch_wait_seconds: float = 1.0) -> None:
        self._stage = stage
        self._link = link
        self._traffic = traffic
        self._telemetry = telemetry
        self._ttl_ms = str(int(ttl_seconds * 1000))
        self._max_pending = max_pending
        self._max_bytes = max_pending_bytes
        self._max_wait = max(_GATHER_SECONDS, max_batch_wait_seconds)
        self._bytes = 0
        self._queue: deque[tuple[Turn, Deliver]] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._current: deque[tuple[Turn, Deliver]] = deque()  # the batch's turns not delivered yet
        self._gather = _GATHER_SECONDS
        self._alone: OrderedDict[str, str] = OrderedDict()  # decided alone, to write back (bounded)
        link.on_recovery(self.write_back)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def submit(self, turn: Turn, deliver: Deliver) -> None:
        """Deliver ``turn``'s decision now (known conversation) or after the fleet's answer. Never waits."""
        key = conversation_key(turn)
        if self._stage.cached(key) is not None:
            deliver(turn, self._stage.decide(turn))
            return
        size = turn.text_bytes
        if self._task is None or len(self._queue) >= self._max_pending or self._bytes + size > self._max_bytes:
            self._telemetry.add(FLEET_DECISIONS, source="overload")
            deliver(turn, self._decide_alone(turn))
            return
        self._queue.append((turn, deliver))
        self._bytes += size
        self._wake.set()

    def _decide_alone(self, turn: Turn) -> SamplingDecision:
        key = conversation_key(turn)
        known = self._stage.cached(key) is not None
        decision = self._stage.decide(turn)
        if not known:
            self._alone[key] = encode_decision(decision)
            while len(self._alone) > self._max_pending:
                self._alone.popitem(last=False)
        return decision

    # -- the batch loop --------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                # Let the rest of a burst arrive (an OTLP batch assembles within a few ms): drawn
                # together, a burst is drawn in the uniforms' order (see _resolve).
                await asyncio.sleep(self._gather)
            batch = [self._queue.popleft() for _ in range(min(_BATCH, len(self._queue)))]
            self._current = deque(batch)
            self._bytes -= sum(turn.text_bytes for turn, _ in batch)
            self._gather = (min(self._max_wait, self._gather * 2) if len(batch) < _SMALL_BATCH else _GATHER_SECONDS)
            try:
                await self._settle(batch)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug here must not strand the batch: decide what is left alone
                log.exception("fleet: deciding a batch failed; decided locally")
                while self._current:
                    turn, deliver = self._current.popleft()
                    deliver(turn, self._decide_alone(turn))

    async def _settle(self, batch: list[tuple[Turn, Deliver]]) -> None:
        unknown: OrderedDict[str, Turn] = OrderedDict()
        for turn, _ in batch:
            key = conversation_key(turn)
            if self._stage.cached(key) is None and key not in unknown:
                unknown[key] = turn
        if unknown and self._link.healthy:
            await self._resolve(unknown)
        for key, turn in unknown.items():
            if self._stage.cached(key) is None:  # Redis away: alone
                self._telemetry.add(FLEET_DECISIONS, source="local")
                self._decide_alone(turn)
        while self._current:
            turn, deliver = self._current.popleft()
            key = conversation_key(turn)
            # Cached now: the same decision for every turn. The first turn of a conversation settled
            # here was already reported to the policies (adopt/decide); later ones are reported now.
            first = unknown.pop(key, None) is turn
            decision = self._stage.cached(key) if first else None
            deliver(turn, decision if decision is not None else self._stage.decide(turn))

    async def _resolve(self, unknown: OrderedDict[str, Turn]) -> None:
        keys = list(unknown)
        redis_keys = [self._link.key("decision", k) for k in keys]
        stored = await self._link.script(_LOOKUP, redis_keys, [self._ttl_ms])
        if stored is None:
            return
        proposals: list[tuple[str, SamplingDecision, str, list[str]]] = []
        fresh: list[str] = []
        for key, text in zip(keys, stored):
            known = decode_decision(text) if text else None
            if known is not None:
                self._stage.adopt(key, known, first=False)
                self._telemetry.add(FLEET_DECISIONS, source="fleet")
            else:
                fresh.append(key)
        # A batch is drawn in the order of the conversations' uniforms, not of arrival: when a cap
        # sheds part of a burst, what it keeps is then a random part of it. Arrival order within a
        # burst is not (in a fleet, the conversations a replica sees first are those whose turns did
        # not reach the others' earlier batches: short ones), and post-stratification needs the kept
        # to be like the shed.
        fresh.sort(key=self._stage.uniform)
        interval = self._traffic.interval()
        for key in fresh:
            result = self._stage.draw(unknown[key])
            decision = result.decision
            if decision.cell is not None:
                # Per replica: each replica's cap sheds at its own rate, and which replica decides a
                # conversation depends on where its turns land (a long one reaches the first batch
                # more often), so only one replica's decisions are exchangeable within a cell.
                node = f"{decision.cell}@{self._link.replica_id}"
                decision = replace(decision, cell=cell_id(FLEET, interval, decision.probability, node))
            else:
                decision = replace(decision, cell=None)
            nodes = result.plan.nodes() if result.plan is not None else []
            proposals.append((key, decision, result.outcome, nodes))
        if not proposals:
            return
        await self._propose(proposals, interval)

    async def _propose(self, proposals: list[tuple[str, SamplingDecision, str, list[str]]], interval: int) -> None:
        # The interval the cells were named with: their counts must land in that interval's hash.
        keys = [self._traffic.key(interval)] + [self._link.key("decision", p[0]) for p in proposals]
        args: list[str] = [self._ttl_ms, str(TRAFFIC_TTL_SECONDS)]
        for _, decision, outcome, nodes in proposals:
            cell = ""
            if decision.cell is not None:
                _, _, rest = decision.cell.split("/", 2)  # "<p>/<node>" within the interval's hash
                cell = rest
            args += [encode_decision(decision), cell, outcome, _SEP.join(nodes)]
        replies = await self._link.script(_PROPOSE, keys, args)
        if replies is None:
            return  # Redis went away between the round trips: these conversations are decided alone
        for (key, decision, _, _), reply in zip(proposals, replies):
            winner = decode_decision(reply) if reply else None
            if winner is None:
                self._stage.adopt(key, decision, first=True)
                self._telemetry.add(FLEET_DECISIONS, source="own")
            else:
                self._stage.adopt(key, winner, first=False)
                self._telemetry.add(FLEET_DECISIONS, source="race")

    async def write_back(self) -> None:
        """Store the decisions taken alone during an outage (``SET NX``: the fleet's first wins)."""
        while self._alone and self._link.healthy:
            items = [self._alone.popitem(last=False) for _ in range(min(_BATCH, len(self._alone)))]
            keys = [self._link.key("decision", k) for k, _ in items]
            stored = await self._link.script(_WRITE_BACK, keys, [self._ttl_ms, *(v for _, v in items)])
            if stored is None:
                for key, value in items:  # still away: keep them for the next recovery
                    self._alone[key] = value
                return
            self._telemetry.add(FLEET_DECISIONS, int(stored), source="written_back")

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="rag-monitor-fleet-decisions")

    async def drain(self, deadline: float | None = None) -> None:
        """Stop batching; decide what is still queued here, alone (shutdown: nothing accepted is lost).
        The batch task is given until ``deadline`` (a ``loop.time()``; at most a second) to stop."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            loop = asyncio.get_running_loop()
            limit = 1.0 if deadline is None else min(1.0, max(0.0, deadline - loop.time()))
            await asyncio.wait([task], timeout=limit)
        # What the cut-off batch had not delivered yet (delivery pops as it goes), then the queue.
        self._queue.extendleft(reversed(self._current))
        self._current = deque()
        self._bytes = 0
        while self._queue:
            turn, deliver = self._queue.popleft()
            self._telemetry.add(FLEET_DECISIONS, source="local")
            deliver(turn, self._decide_alone(turn))

    async def shutdown(self, deadline: float | None = None) -> None:
        await self.drain(deadline)

