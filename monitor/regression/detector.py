r"""Time-based change detection with an anytime false-alarm bound: a mixture Shiryaev–Roberts
e-detector (Shin, Ramdas & Rinaldo, "E-detectors: a nonparametric framework for sequential change
detection", New England J. Stat. Data Sci. 2024).

One detector watches one (service, metric, statistic); the outcome is the defect indicator, or
``1 − score`` for scores, so "worse" is always "larger".

Step
    A step is one non-empty bucket of ``detector_bucket_seconds`` (5 minutes by default): the
    false-alarm rate per week is then the same at 20 or 600 evaluations an hour, and empty
    buckets (quiet nights) cost nothing.

E-values
    Against a baseline level ``p0`` each evaluation contributes the betting factor
    ``1 + λ u (x − p0)`` with ``u = w / w̄`` its weight relative to the reference mean weight
    (clipped at ``detector_max_relative_weight``). If evaluations are independent draws from the
    population and its weighted mean is at most ``p0``, ``E[w (x − p0)] ≤ 0`` per sampled unit
    (Horvitz–Thompson), so the factor's expectation is at most 1 and the product over a bucket is
    an e-value. For 0/1 outcomes and ``u = 1``, ``λ = δ / (p0 (1 − p0))`` makes the factor the
    exact likelihood ratio of ``p0 + δ`` against ``p0``. One λ per size ``δ`` in
    ``detector_deltas``; λ is capped so every factor stays ≥ 1/2.

Detector
    For each λ the Shiryaev–Roberts statistic ``R_n = (R_{n−1} + 1) · e_n`` sums the e-processes
    started at every step; their average ``M_n`` satisfies ``E[M_n − n] ≤ E[M_{n−1} − (n − 1)]``
    under no change, so by optional stopping the mean number of steps before ``M_n ≥ A`` is at
    least ``A`` (``detector_threshold``). Evidence and threshold are reported as log10.

Baseline
    ``p0`` is the reference mean (168 sums over ``detector_reference_seconds``: hourly for a
    week) plus
    ``detector_baseline_z`` standard errors, so that an estimate that happens to be low does not
    manufacture evidence. It is re-estimated every ``detector_rebaseline_seconds`` while the
    evidence is below 10; never during a change building up.

Change point, before, after
    A CUSUM on the averaged e-values (``C_n = max(C_{n−1}, 1) · ē_n``) restarts whenever it falls
    to 1: its current run start is ``since``; ``after`` is the weighted mean since then and
    ``before`` the reference mean.

Clearing
    An alarm stays active for ``detector_hold_seconds``; then the level since the change point is
    accepted as the new baseline and the detector restarts from zero evidence.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Mapping

from monitor.regression.attribution import LabelTable, drivers
from monitor.regression.config import RegressionConfig
from monitor.regression.results import Driver, Regression, Statistic
from monitor.regression.sequential import MixtureBoundary, WeightedSums, difference_interval

__all__ = ["ChangeDetector"]

# The reference is kept as 168 sums (hourly for the default week) and label history decays with a
# half-life of a seventh of it (a day): both scale with the configured window, so a test that
# shortens time keeps the same shape.
_REFERENCE_SLOTS = 168
_LABEL_HALF_LIVES_PER_REFERENCE = 7.0
_NEG_INF = -math.inf


def _log_add_one(log_r: float) -> float:
    """log(exp(log_r) + 1) without overflow."""
    if log_r == _NEG_INF:
        return 0.0
    if log_r > 0:
        return log_r + math.log1p(math.exp(-log_r))
    return math.log1p(math.exp(log_r))


def _log_mean_exp(values: list[float]) -> float:
    top = max(values)
    if top == _NEG_INF:
        return _NEG_INF
    return top + math.log(sum(math.exp(v - top) for v in values) / len(values))


class _Baseline:
    """The level tested against and the bets placed on it (fixed between re-estimates)."""

    __slots__ = ("level", "estimate", "mean_weight", "lambdas", "sums", "at")

    def __init__(self, sums: WeightedSums, config: RegressionConfig, binary: bool, at: float) -> None:
        mean = sums.mean() or 0.0
        var_mean = sums.variance_of_mean(binary) or 0.0
        self.estimate = mean
        self.level = min(1.0 - 1e-6, max(1e-6, mean + config.detector_baseline_z * math.sqrt(var_mean)))
        self.mean_weight = sums.sw / sums.n if sums.n else 1.0
        if binary:
            spread = self.level * (1.0 - self.level)
        else:
            per_eval = var_mean * sums.sw * sums.sw / sums.sw2 if sums.sw2 > 0 else 0.0
            spread = max(per_eval, 1e-4)
        cap = 0.5 / (config.detector_max_relative_weight * self.level)
        self.lambdas = tuple(min(delta / spread, cap) for delta in config.detector_deltas)
        self.sums = sums.copy()
        self.at = at


class ChangeDetector:
    """Mixture Shiryaev–Roberts e-detector for an increase of one weighted [0, 1] outcome."""

    def __init__(self, config: RegressionConfig, binary: bool) -> None:
        self._config = config
        self._binary = binary
        self._bucket = config.detector_bucket_seconds
        self._log_threshold = math.log(config.detector_threshold)
        self._boundary = MixtureBoundary.for_evaluations(
            config.alpha, config.cs_design_evaluations, config.cs_design_variance
        )
        k = len(config.detector_deltas)
        # The open step: its index, its weighted sums, its labels, log e-value per λ.
        self._step: int | None = None
        self._step_sums = WeightedSums()
        self._step_labels = self._labels()
        self._step_log_e = [0.0] * k
        # Reference: hourly sums for the baseline, decayed label sums for "before" per value.
        self._slot = max(self._bucket, config.detector_reference_seconds / _REFERENCE_SLOTS)
        self._reference: deque[tuple[int, WeightedSums]] = deque(
            maxlen=max(1, int(config.detector_reference_seconds // self._slot) + 1)
        )
        self._label_decay = 0.5 ** (
            self._bucket * _LABEL_HALF_LIVES_PER_REFERENCE / config.detector_reference_seconds)
        self._reference_labels = self._labels()
        self._baseline: _Baseline | None = None
        self._log_r = [_NEG_INF] * k
        self._log_c = _NEG_INF
        self._run_start: float | None = None
        self._run_sums = WeightedSums()
        self._run_labels = self._labels()
        self._alarm_at: float | None = None
        self._since: float | None = None

    def _labels(self) -> LabelTable:
        return LabelTable(self._config.attribution_labels, self._config.attribution_values_per_label)

    @property
    def armed(self) -> bool:
        return self._baseline is not None

    @property
    def active(self) -> bool:
        return self._alarm_at is not None

    @property
    def log_evidence(self) -> float:
        """Natural log of the averaged Shiryaev–Roberts statistic (−inf before any step)."""
        return _log_mean_exp(self._log_r)

    def observe(self, at: float, weight: float, x: float, labels: Mapping[str, str]) -> None:
        """Account one outcome in [0, 1] (larger is worse). Late ones join the open step."""
        index = int(at // self._bucket)
        if self._step is None:
            self._step = index
        elif index > self._step:
            self._close_step()
            self._step = index
        self._step_sums.add(weight, x)
        self._step_labels.add(labels, weight, x)
        base = self._baseline
        if base is not None:
            u = min(weight / base.mean_weight, self._config.detector_max_relative_weight)
            centred = u * (x - base.level)
            log_e = self._step_log_e
            for i, lam in enumerate(base.lambdas):
                log_e[i] += math.log1p(lam * centred)

    def advance(self, now: float) -> None:
        """Close the open step once ``now`` is past its end."""
        if self._step is not None and int(now // self._bucket) > self._step:
            self._close_step()
            self._step = None

    def _close_step(self) -> None:
        assert self._step is not None
        if self._step_sums.n == 0:
            return
        start = self._step * self._bucket
        end = start + self._bucket
        if self._baseline is not None:
            self._update_statistics(start)
        self._add_reference(start)
        self._step_sums = WeightedSums()
        self._step_labels = self._labels()
        self._step_log_e = [0.0] * len(self._step_log_e)
        self._after_step(end)

    def _update_statistics(self, start: float) -> None:
        log_e = self._step_log_e
        self._log_r = [_log_add_one(r) + e for r, e in zip(self._log_r, log_e)]
        if self._log_c <= 0.0:
            self._log_c = 0.0
            self._run_start = start
            self._run_sums = WeightedSums()
            self._run_labels = self._labels()
        self._log_c += _log_mean_exp(log_e)
        self._run_sums.merge(self._step_sums)
        self._run_labels.merge(self._step_labels)

    def _add_reference(self, start: float) -> None:
        slot = int(start // self._slot)
        if self._reference and self._reference[-1][0] == slot:
            self._reference[-1][1].merge(self._step_sums)
        else:
            self._reference.append((slot, self._step_sums.copy()))
        self._reference_labels.decay(self._label_decay)
        self._reference_labels.merge(self._step_labels)

    def _reference_sums(self, now: float) -> WeightedSums:
        oldest = int((now - self._config.detector_reference_seconds) // self._slot)
        total = WeightedSums()
        for slot, sums in self._reference:
            if slot >= oldest:
                total.merge(sums)
        return total

    def _after_step(self, end: float) -> None:
        cfg = self._config
        base = self._baseline
        if base is None:
            reference = self._reference_sums(end)
            if reference.n >= cfg.detector_min_reference_evaluations:
                self._baseline = _Baseline(reference, cfg, self._binary, end)
            return
        if self._alarm_at is None:
            if self.log_evidence >= self._log_threshold:
                self._alarm_at = end
                self._since = self._run_start
            elif end - base.at >= cfg.detector_rebaseline_seconds and self.log_evidence < math.log(10.0):
                self._baseline = _Baseline(self._reference_sums(end), cfg, self._binary, end)
        elif end - self._alarm_at >= cfg.detector_hold_seconds:
            self._accept_new_level(end)

    def _accept_new_level(self, end: float) -> None:
        """The change is accepted: its level becomes the baseline, the evidence starts over."""
        accepted = self._run_sums if self._run_sums.n else self._reference_sums(end)
        self._baseline = _Baseline(accepted, self._config, self._binary, end)
        self._reference.clear()
        self._reference.append((int((end - self._bucket) // self._slot), accepted.copy()))
        self._reference_labels = self._labels()
        self._reference_labels.merge(self._run_labels)
        self._log_r = [_NEG_INF] * len(self._log_r)
        self._log_c = _NEG_INF
        self._run_start = None
        self._run_sums = WeightedSums()
        self._run_labels = self._labels()
        self._alarm_at = None
        self._since = None

    def report(self, service: str, metric: str, statistic: Statistic, limit: int) -> Regression | None:
        """The detector's state, in the statistic's own terms (scores: higher is better)."""
        base = self._baseline
        if base is None:
            return None
        evidence = self.log_evidence
        since = self._since if self._alarm_at is not None else self._run_start
        run = self._run_sums if self._run_start is not None else None
        before: float | None = base.estimate
        after = run.mean() if run is not None else None
        interval = difference_interval(run, base.sums, self._boundary, self._binary) if run else None
        lower = interval.lower if interval else None
        upper = interval.upper if interval else None
        # Attribution only where someone will read it: a change is building or has been found.
        watching = run is not None and evidence > 0.0
        found = drivers(self._reference_labels, self._run_labels, limit) if watching else ()
        if not self._binary:
            before = None if before is None else 1.0 - before
            after = None if after is None else 1.0 - after
            lower, upper = (None if upper is None else -upper), (None if lower is None else -lower)
            found = tuple(_as_score(d) for d in found)
        return Regression(
            service=service,
            metric=metric,
            statistic=statistic,
            since=since,
            before=before,
            after=after,
            lower=lower,
            upper=upper,
            evidence=max(0.0, evidence / math.log(10.0)) if evidence != _NEG_INF else 0.0,
            threshold=self._log_threshold / math.log(10.0),
            active=self._alarm_at is not None,
            drivers=found,
        )


def _as_score(driver: Driver) -> Driver:
    return Driver(
        label=driver.label,
        value=driver.value,
        before=None if driver.before is None else 1.0 - driver.before,
        after=None if driver.after is None else 1.0 - driver.after,
        share=driver.share,
        n=driver.n,
    )
