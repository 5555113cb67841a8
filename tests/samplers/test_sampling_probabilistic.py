"""probabilistic: share, nesting, and determinism across processes."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from monitor.model import Turn
from samplers import PolicySampler, uniform
from samplers.probabilistic import ProbabilisticPolicy

N_IDS = 100_000
SALT = "test-salt"


def _turn(conversation_id: str) -> Turn:
    return Turn(trace_id="t", conversation_id=conversation_id, question="q", answer="a")


def _kept(rate: float, ids: list[str]) -> list[bool]:
    sampler = PolicySampler(ProbabilisticPolicy("probabilistic", rate), SALT)
    return [sampler.decide(_turn(i)).sampled for i in ids]


@pytest.mark.parametrize("rate", [0.01, 0.05, 0.25, 0.5])
def test_kept_share_within_four_sigma(rate: float) -> None:
    ids = [f"conv-{i}" for i in range(N_IDS)]
    share = sum(_kept(rate, ids)) / N_IDS
    # Binomial: sd of the share is sqrt(p(1-p)/n); 4 sigma is exceeded with prob ~6e-5.
    sigma = math.sqrt(rate * (1 - rate) / N_IDS)
    assert abs(share - rate) <= 4 * sigma


def test_nested_for_every_id() -> None:
    ids = [f"conv-{i}" for i in range(N_IDS)]
    rates = [0.01, 0.05, 0.25, 0.5, 1.0]
    kept = {rate: _kept(rate, ids) for rate in rates}
    for low, high in zip(rates, rates[1:]):
        assert all(h for lo, h in zip(kept[low], kept[high]) if lo), (low, high)


def test_decision_carries_rate_and_weight() -> None:
    sampler = PolicySampler(ProbabilisticPolicy("p5", 0.05), SALT)
    decisions = [sampler.decide(_turn(f"c{i}")) for i in range(1000)]
    assert {d.probability for d in decisions} == {0.05}
    assert all(d.policy == "p5" for d in decisions if d.sampled)
    assert all(d.weight == pytest.approx(20.0) for d in decisions)


def test_rate_zero_and_one() -> None:
    ids = [f"c{i}" for i in range(2000)]
    assert not any(_kept(0.0, ids))
    assert all(_kept(1.0, ids))


def test_uniform_is_in_unit_interval_and_salt_dependent() -> None:
    values = [uniform(SALT, f"c{i}") for i in range(10_000)]
    assert all(0.0 <= v < 1.0 for v in values)
    other = [uniform("other-salt", f"c{i}") for i in range(10_000)]
    assert sum(a == b for a, b in zip(values, other)) == 0


_CHILD = """
import json, sys
from monitor.model import Turn
from samplers import PolicySampler
from samplers.probabilistic import ProbabilisticPolicy
s = PolicySampler(ProbabilisticPolicy("p", 0.3), sys.argv[1])
ids = [f"conv-{i}" for i in range(5000)]
print(json.dumps([s.decide(Turn("t", i, "q", "a")).sampled for i in ids]))
"""


def test_same_decisions_in_two_processes() -> None:
    # Different PYTHONHASHSEEDs: the draw must not depend on Python's salted hash().
    runs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, SALT],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=os.getcwd(),
        )
        runs.append(json.loads(out.stdout))
    here = _kept(0.3, [f"conv-{i}" for i in range(5000)])
    assert runs[0] == runs[1] == here
