"""One sampling decision per conversation for the whole fleet: the first replica to decide wins.

The evaluation stage hands each assembled turn to :meth:`FleetDecider.submit`, which never waits:
a conversation this replica already knows is delivered at once from the sampling stage's cache;
any other goes into a bounded queue. A task takes the queue in batches; each batch costs **one**
Redis round trip, a script that does two things in order:

1. **propose** the previous batch's draws: for the conversations the previous round trip found
   undecided, this replica drew with its own policy tree (probabilities from the fleet's arrivals);
   the script stores each proposal with ``SET NX`` and counts the fleet's arrivals and
   post-stratification cells for the proposals that won. A proposal that lost a race (another
   replica decided meanwhile) is replaced by the winner's decision and counted;
2. **look up** this batch's conversations: the stored decision of each, its TTL refreshed (a
   decision lives as long as its conversation keeps talking). Those nobody decided are drawn now,
   in the order of their uniforms, and proposed with the next round trip.

Drawing only after the lookup keeps the caps honest: a conversation another replica decided never
spends this replica's rate limit or budget. Proposing with the next batch instead of at once halves
the round trips, which is what the fleet's CPU cost follows (``benchmarks/README-fleet.md``); the
price is that a first turn waits up to two gathering windows (``fleet.max_batch_wait_seconds``
each, off the ingest path) and that a race is possible for that long. The replica's heartbeat
rides on the same script when it is due (``FleetLink.heartbeat_rider``).

When Redis is away (``FleetLink`` degraded) the conversations in flight are decided here alone,
weighted by this replica's own counts (``L`` cells), and those decisions are written back with
``SET NX`` when Redis answers again, so the conversation's later turns elsewhere follow them.
Overload (the queue full) decides locally too, counted: an accepted turn is never dropped for want
of a decision.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass, replace
from typing import Any, Callable

from monitor.fleet.link import HEARTBEAT_LUA, FleetLink
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
# small one up to fleet.max_batch_wait_seconds (a quiet replica would otherwise pay a round trip
# for every few conversations: the fleet's cost follows round trips, benchmarks/README-fleet.md).
_GATHER_SECONDS = 0.02
_SMALL_BATCH = 16
_SEP = "\x1f"  # between a proposal's nodes
_FIELD = "\x1e"  # between a proposal's fields, and between the replies of a list
# A stratum comes from turn data: a separator in it must not shift the script's fields.
_UNSEPARATED = str.maketrans({_SEP: "?", _FIELD: "?"})

# KEYS[1]: the proposals' interval traffic hash; KEYS[2]: the replicas' heartbeat set; KEYS[3 .. 2+P]:
# proposals' decision keys; KEYS[3+P ..]: lookups' decision keys. ARGV[1]: TTL ms; ARGV[2]: traffic
# TTL s; ARGV[3]: P; ARGV[4], ARGV[5]: heartbeat replica id ("" for none) and alive seconds; then one
# argument per proposal: decision JSON, cell ("" when 1/p is final), outcome and nodes (joined by
# \31), separated by \30. Returns {proposals: "" where it won, else the decision stored; lookups:
# the decision or ""; each list joined by \30 (JSON never holds a raw \30); heartbeat}. One argument
# and one reply string per list rather than per field: the client's encoding and parsing of each
# element was most of the fleet's CPU per conversation (benchmarks/README-fleet.md).
_EXCHANGE = HEARTBEAT_LUA + """
local ttl = ARGV[1]
local count = tonumber(ARGV[3])
local traffic = KEYS[1]
local proposed, looked, beat = {}, {}, {}
for i = 1, count do
  local key = KEYS[2 + i]
  local existing = redis.call('GET', key)
  if existing then
    proposed[i] = existing
  else
    local decision, cell, outcome, nodes = string.match(ARGV[5 + i], '^(.-)\\030(.-)\\030(.-)\\030(.*)$')
    redis.call('SET', key, decision, 'PX', ttl)
    proposed[i] = ''
    if cell ~= '' then
      redis.call('HINCRBY', traffic, 'c|' .. cell .. '|a', 1)
      if outcome ~= 'not_sampled' then redis.call('HINCRBY', traffic, 'c|' .. cell .. '|s', 1) end
      if outcome == 'sampled' then redis.call('HINCRBY', traffic, 'c|' .. cell .. '|k', 1) end
    end
    for node in string.gmatch(nodes, '[^\\031]+') do
      redis.call('HINCRBY', traffic, 'n|' .. node, 1)
    end
  end
end
if count > 0 then redis.call('EXPIRE', traffic, ARGV[2]) end
for i = 3 + count, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    redis.call('PEXPIRE', KEYS[i], ttl)
    looked[#looked + 1] = v
  else
    looked[#looked + 1] = ''
  end
end
if ARGV[4] ~= '' then beat = heartbeat(KEYS[2], ARGV[4], ARGV[5]) end
return {table.concat(proposed, '\\030'), table.concat(looked, '\\030'), beat}
"""

# KEYS: decision keys; ARGV[1]: TTL ms; ARGV[2..]: decisions. SET NX each (write-back after an outage).
_WRITE_BACK = """
local stored = 0
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[i + 1], 'PX', ARGV[1], 'NX') then stored = stored + 1 end
end
return stored
"""


@dataclass(frozen=True, slots=True)
class _Proposal:
    key: str
    decision: SamplingDecision
    outcome: str
    nodes: list[str]


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
        self._bytes = 0  # text bytes of the turns queued or in flight
        self._queue: deque[tuple[Turn, Deliver]] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._current: deque[tuple[Turn, Deliver]] = deque()  # the batch's turns not placed yet
        # Turns whose conversation is being decided (looked up, or drawn and proposed next), by conversation.
        self._in_flight: OrderedDict[str, list[tuple[Turn, Deliver]]] = OrderedDict()
        self._held = 0  # turns in _in_flight
        self._proposals: list[_Proposal] = []  # drawn after the last lookup, sent with the next round trip
        self._proposal_interval = 0  # the interval the proposals' cells were named with
        self._gather = _GATHER_SECONDS
        self._alone: OrderedDict[str, str] = OrderedDict()  # decided alone, to write back (bounded)
        link.on_recovery(self.write_back)

    @property
    def pending(self) -> int:
        return len(self._queue) + self._held

    def submit(self, turn: Turn, deliver: Deliver) -> None:
        """Deliver ``turn``'s decision now (known conversation) or after the fleet's answer. Never waits."""
        key = conversation_key(turn)
        if self._stage.cached(key) is not None:
            deliver(turn, self._stage.decide(turn))
            return
        size = turn.text_bytes
        if self._task is None or self.pending >= self._max_pending or self._bytes + size > self._max_bytes:
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
                if not self._proposals:
                    await self._wake.wait()
                # Let the rest of a burst arrive (an OTLP batch assembles within a few ms; drawn
                # together, a burst is drawn in the uniforms' order, see _exchange), and give waiting
                # proposals a batch to ride with.
                await asyncio.sleep(self._gather)
            batch = [self._queue.popleft() for _ in range(min(_BATCH, len(self._queue)))]
            self._current = deque(batch)
            self._gather = (min(self._max_wait, self._gather * 2) if len(batch) < _SMALL_BATCH else _GATHER_SECONDS)
            try:
                await self._cycle()
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug here must not strand turns: decide what is in flight alone
                log.exception("fleet: deciding a batch failed; decided locally")
                self._proposals = []
                while self._current:
                    turn, deliver = self._current.popleft()
                    self._hold(conversation_key(turn), turn, deliver)
                for key in list(self._in_flight):
                    self._settle_alone(key)

    def _hold(self, key: str, turn: Turn, deliver: Deliver) -> bool:
        """Put ``turn`` in flight; True when its conversation was not in flight yet."""
        waiting = self._in_flight.get(key)
        self._held += 1
        if waiting is None:
            self._in_flight[key] = [(turn, deliver)]
            return True
        waiting.append((turn, deliver))
        return False

    async def _cycle(self) -> None:
        lookups: list[str] = []
        while self._current:
            turn, deliver = self._current.popleft()
            key = conversation_key(turn)
            if self._stage.cached(key) is not None:  # decided since it was queued
                self._bytes -= turn.text_bytes
                deliver(turn, self._stage.decide(turn))
            elif self._hold(key, turn, deliver):
                lookups.append(key)
        proposals, self._proposals = self._proposals, []
        if not lookups and not proposals:
            return
        reply = await self._exchange(proposals, lookups) if self._link.healthy else None
        if reply is None:  # Redis away: what is in flight for these conversations is decided alone
            for key in [p.key for p in proposals] + lookups:
                self._settle_alone(key)
            return
        proposed, looked, beat = reply
        if beat:
            self._link.heartbeat_answered(beat)
        self._settle_proposals(proposals, proposed)
        fresh: list[str] = []
        for key, text in zip(lookups, looked):
            known = decode_decision(text) if text else None
            if known is None:
                fresh.append(key)
                continue
            self._stage.adopt(key, known, first=False)
            self._telemetry.add(FLEET_DECISIONS, source="fleet")
            self._release(key)
        self._draw(fresh)

    def _draw(self, fresh: list[str]) -> None:
        """Draw for the conversations nobody decided; they are proposed with the next round trip."""
        # In the order of the conversations' uniforms, not of arrival: when a cap sheds part of a
        # burst, what it keeps is then a random part of it. Arrival order within a burst is not (in a
        # fleet, the conversations a replica sees first are those whose turns did not reach the
        # others' earlier batches: short ones), and post-stratification needs the kept to be like the shed.
        fresh.sort(key=self._stage.uniform)
        interval = self._traffic.interval()
        for key in fresh:
            result = self._stage.draw(self._in_flight[key][0][0])
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
            self._proposals.append(_Proposal(key, decision, result.outcome, nodes))
        self._proposal_interval = interval

    async def _exchange(self, proposals: list[_Proposal], lookups: list[str]) -> Any:
        """One round trip: store ``proposals``, look ``lookups`` up, beat when due. None: Redis away."""
        # The interval the cells were named with: their counts must land in that interval's hash.
        rider = self._link.heartbeat_rider()
        beat_key, beat_args = rider if rider is not None else (self._link.key("replicas"), ["", "0"])
        keys = [self._traffic.key(self._proposal_interval), beat_key]
        keys += [self._link.key("decision", p.key) for p in proposals]
        keys += [self._link.key("decision", k) for k in lookups]
        args: list[str] = [self._ttl_ms, str(TRAFFIC_TTL_SECONDS), str(len(proposals)), *beat_args]
        for proposal in proposals:
            cell = ""
            if proposal.decision.cell is not None:
                _, _, cell = proposal.decision.cell.split("/", 2)  # "<p>/<node>" within the interval's hash
            nodes = _SEP.join(n.translate(_UNSEPARATED) for n in proposal.nodes)
            args.append(_FIELD.join((encode_decision(proposal.decision), cell.translate(_UNSEPARATED),
                                     proposal.outcome, nodes)))
        reply = await self._link.script(_EXCHANGE, keys, args)
        if reply is None:
            return None
        proposed = reply[0].split(_FIELD) if proposals else []
        looked = reply[1].split(_FIELD) if lookups else []
        return proposed, looked, reply[2]

    def _settle_proposals(self, proposals: list[_Proposal], replies: list[str]) -> None:
        for proposal, text in zip(proposals, replies):
            winner = decode_decision(text) if text else None
            if winner is None:
                self._stage.adopt(proposal.key, proposal.decision, first=True)
                self._telemetry.add(FLEET_DECISIONS, source="own")
            else:
                self._stage.adopt(proposal.key, winner, first=False)
                self._telemetry.add(FLEET_DECISIONS, source="race")
            self._release(proposal.key)

    def _release(self, key: str) -> None:
        """Deliver the turns in flight for ``key``, whose decision is cached now."""
        waiting = self._in_flight.pop(key, None) or []
        self._held -= len(waiting)
        for index, (turn, deliver) in enumerate(waiting):
            self._bytes -= turn.text_bytes
            # The first turn was already reported to the policies (adopt); later ones are reported now.
            decision = self._stage.cached(key) if index == 0 else None
            deliver(turn, decision if decision is not None else self._stage.decide(turn))

    def _settle_alone(self, key: str) -> None:
        waiting = self._in_flight.get(key)
        if not waiting:
            self._in_flight.pop(key, None)
            return
        if self._stage.cached(key) is None:
            self._telemetry.add(FLEET_DECISIONS, source="local")
            self._decide_alone(waiting[0][0])
        self._release(key)

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
        """Stop batching; store the last proposals when Redis answers in time, and decide what is still
        queued or in flight here, alone (shutdown: nothing accepted is lost). The batch task and the
        last round trip are given until ``deadline`` (a ``loop.time()``; at most a second each)."""
        task, self._task = self._task, None
        loop = asyncio.get_running_loop()

        def limit() -> float:
            return 1.0 if deadline is None else min(1.0, max(0.0, deadline - loop.time()))

        if task is not None:
            task.cancel()
            await asyncio.wait([task], timeout=limit())
        # What the cut-off batch had not placed yet (placing pops as it goes) goes in flight.
        while self._current:
            turn, deliver = self._current.popleft()
            self._hold(conversation_key(turn), turn, deliver)
        # Drawn already: proposed to the fleet so the conversation's other turns elsewhere follow it.
        proposals, self._proposals = self._proposals, []
        if proposals and self._link.healthy and limit() > 0:
            try:
                reply = await asyncio.wait_for(self._exchange(proposals, []), limit())
            except TimeoutError:
                reply = None
            if reply is not None:
                self._settle_proposals(proposals, reply[0])
        for key in list(self._in_flight):
            self._settle_alone(key)
        while self._queue:
            turn, deliver = self._queue.popleft()
            self._telemetry.add(FLEET_DECISIONS, source="local")
            deliver(turn, self._decide_alone(turn))
        self._bytes = 0

    async def shutdown(self, deadline: float | None = None) -> None:
        await self.drain(deadline)
