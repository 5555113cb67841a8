"""Versions of one service and the comparison of its candidate release with its baseline.

Which versions are compared
    Every version has an *activation* time: when it was first seen, or when it came back after a
    rollback. It comes back when it is seen again after at least ``reactivation_gap_seconds`` of
    silence during which the other versions answered at least ``reactivation_min_evaluations``
    evaluations, and it is not already the candidate. The **candidate** is the version activated
    last (for a plain deploy: the last first seen); the **baseline** is the one activated last
    before it. So v1 → v2 → v1 compares v1 (candidate, back) against v2, and a later v3 against v1.

How they are compared
    ``canary``: the baseline still answered ``canary_grace_seconds`` after the candidate was
    activated. Only buckets (``release_bucket_seconds``) since the activation in which both versions
    answered are pooled, so both sides see the same minutes of traffic.
    ``adjacent``: otherwise (a rolling update or a recreate). The candidate's evaluations since its
    activation against the baseline's latest ``adjacent_baseline_evaluations`` before it.
"""

from __future__ import annotations

from typing import Mapping

from monitor.regression.attribution import LabelTable, drivers
from monitor.regression.config import RegressionConfig
from monitor.regression.results import ComparisonMode, ReleaseComparison, VersionInfo
from monitor.regression.sequential import (
    MixtureBoundary,
    RunningIntersection,
    WeightedSums,
    difference_interval,
)

__all__ = ["ServiceVersions"]


class _Bucket:
    __slots__ = ("defect", "score")

    def __init__(self) -> None:
        self.defect = WeightedSums()
        self.score = WeightedSums()


class _VersionMetric:
    """One version's history for one metric: bounded buckets plus labels since activation."""

    __slots__ = ("buckets", "labels", "evaluations")

    def __init__(self, config: RegressionConfig) -> None:
        self.evaluations = 0
        self.buckets: dict[int, _Bucket] = {}
        self.labels = LabelTable(config.attribution_labels, config.attribution_values_per_label)


class _Version:
    __slots__ = ("name", "first_seen", "last_seen", "activated_at", "evaluations", "others_at_last",
                 "metrics")

    def __init__(self, name: str, at: float, others: int) -> None:
        self.name = name
        self.first_seen = at
        self.last_seen = at
        self.activated_at = at
        self.evaluations = 0
        self.others_at_last = others
        self.metrics: dict[str, _VersionMetric] = {}


class ServiceVersions:
    """The remembered versions of one service (at most ``versions_per_service``)."""

    def __init__(self, config: RegressionConfig) -> None:
        self._config = config
        self._versions: dict[str, _Version] = {}
        self._total = 0
        self._latest = float("-inf")
        self._cache: dict[str, _Pooled] = {}
        self._boundary = MixtureBoundary.for_evaluations(
            config.alpha, config.cs_design_evaluations, config.cs_design_variance
        )

    def observe(self, at: float, version: str, metric: str, weight: float, defect: bool | None,
                score: float | None, labels: Mapping[str, str]) -> None:
        state = self._version(version, at)
        state.evaluations += 1
        self._total += 1
        state.last_seen = max(state.last_seen, at)
        self._latest = max(self._latest, at)
        state.others_at_last = self._total - state.evaluations
        per_metric = state.metrics.get(metric)
        if per_metric is None:
            per_metric = state.metrics[metric] = _VersionMetric(self._config)
        per_metric.evaluations += 1
        key = int(at // self._config.release_bucket_seconds)
        bucket = per_metric.buckets.get(key)
        if bucket is None:
            bucket = per_metric.buckets[key] = _Bucket()
            if len(per_metric.buckets) > self._config.release_buckets_per_version:
                del per_metric.buckets[min(per_metric.buckets)]
        if defect is not None:
            bucket.defect.add(weight, 1.0 if defect else 0.0)
            per_metric.labels.add(labels, weight, 1.0 if defect else 0.0)
        if score is not None:
            bucket.score.add(weight, score)

    def _version(self, name: str, at: float) -> _Version:
        state = self._versions.get(name)
        if state is None:
            if len(self._versions) >= self._config.versions_per_service:
                oldest = min(self._versions.values(), key=lambda v: (v.last_seen, v.first_seen))
                del self._versions[oldest.name]
            state = self._versions[name] = _Version(name, at, self._total)
            return state
        others_meanwhile = (self._total - state.evaluations) - state.others_at_last
        if (at - state.last_seen >= self._config.reactivation_gap_seconds
                and others_meanwhile >= self._config.reactivation_min_evaluations
                and self.candidate() is not state):
            state.activated_at = at
            # A comeback is a new release of the same build: its history starts again.
            state.metrics.clear()
        return state

    def _by_activation(self) -> list[_Version]:
        return sorted(self._versions.values(), key=lambda v: (v.activated_at, v.first_seen, v.name))

    def candidate(self) -> _Version | None:
        ordered = self._by_activation()
        return ordered[-1] if ordered else None

    def versions(self) -> list[VersionInfo]:
        return [VersionInfo(v.name, v.first_seen, v.last_seen, v.evaluations)
                for v in sorted(self._versions.values(), key=lambda v: (v.first_seen, v.name))]

    def metric_evaluations(self) -> dict[str, dict[str, int]]:
        """version -> metric -> evaluations since the version's activation."""
        return {v.name: {m: state.evaluations for m, state in v.metrics.items()}
                for v in self._versions.values()}

    def comparisons(self, service: str) -> list[ReleaseComparison]:
        ordered = self._by_activation()
        if len(ordered) < 2:
            return []
        candidate, baseline = ordered[-1], ordered[-2]
        canary = baseline.last_seen >= candidate.activated_at + self._config.canary_grace_seconds
        mode: ComparisonMode = "canary" if canary else "adjacent"
        out = []
        for metric in sorted(candidate.metrics):
            base_metric = baseline.metrics.get(metric)
            if base_metric is None:
                continue
            out.append(self._compare(service, metric, baseline, candidate, base_metric,
                                     candidate.metrics[metric], mode))
        return out

    def _pooled(self, metric: str, baseline: _Version, candidate: _Version, base: _VersionMetric,
                cand: _VersionMetric, mode: ComparisonMode) -> tuple[WeightedSums, ...]:
        """Candidate and baseline sums (defect, score each), closed buckets cached.

        Buckets older than the one before the latest observation no longer change, so their
        pooled sums are kept and only newer buckets are added on each call: a report every
        scrape costs O(new buckets), not O(history). Each closed bucket is one look of the
        confidence sequence, intersected into the comparison's running bounds: the looks depend
        on the data only, so replicas fed the same evaluations report the same bounds whenever
        (and however often) they are asked.
        """
        start = int(candidate.activated_at // self._config.release_bucket_seconds)
        closed = int(self._latest // self._config.release_bucket_seconds) - 1
        signature = (candidate.name, candidate.activated_at, baseline.name, baseline.activated_at,
                     mode)
        cached = self._cache.get(metric)
        if cached is None or cached.signature != signature:
            cached = self._cache[metric] = _Pooled(signature, start)
            if mode == "adjacent":
                cached.baseline = _latest_before(base, start, self._config.adjacent_baseline_evaluations)
        for k in range(cached.upto, closed):
            if cached.add(k, cand, base, mode == "canary"):
                cached.look(self._boundary, self._config.min_evaluations)
        cached.upto = max(cached.upto, closed)
        out = cached.copy()
        for k in sorted(key for key in cand.buckets if key >= out.upto):
            out.add(k, cand, base, mode == "canary")
        return out.candidate + out.baseline

    def _compare(self, service: str, metric: str, baseline: _Version, candidate: _Version,
                 base: _VersionMetric, cand: _VersionMetric, mode: ComparisonMode) -> ReleaseComparison:
        c_def, c_score, b_def, b_score = self._pooled(metric, baseline, candidate, base, cand, mode)
        cfg = self._config
        enough_def = c_def.n >= cfg.min_evaluations and b_def.n >= cfg.min_evaluations
        enough_score = c_score.n >= cfg.min_evaluations and b_score.n >= cfg.min_evaluations
        # The open buckets are a look too, but not remembered: see _pooled.
        running = self._cache[metric]
        d = running.defect_bounds.peek(
            difference_interval(c_def, b_def, self._boundary, binary=True) if enough_def else None)
        s = running.score_bounds.peek(
            difference_interval(c_score, b_score, self._boundary, binary=False) if enough_score else None)
        rate_b, rate_c = b_def.mean(), c_def.mean()
        difference = None if rate_b is None or rate_c is None else rate_c - rate_b
        found = (drivers(base.labels, cand.labels, cfg.drivers)
                 if difference is not None and difference > 0 else ())
        score_b, score_c = b_score.mean(), c_score.mean()
        return ReleaseComparison(
            service=service,
            metric=metric,
            baseline=baseline.name,
            candidate=candidate.name,
            mode=mode,
            n_baseline=max(b_def.n, b_score.n),
            n_candidate=max(c_def.n, c_score.n),
            defect_rate_baseline=rate_b,
            defect_rate_candidate=rate_c,
            difference=difference,
            lower=d.lower if d else None,
            upper=d.upper if d else None,
            score_baseline=score_b,
            score_candidate=score_c,
            score_difference=None if score_b is None or score_c is None else score_c - score_b,
            score_lower=s.lower if s else None,
            score_upper=s.upper if s else None,
            regressed=d is not None and d.lower > cfg.margin,
            drivers=found,
        )


class _Pooled:
    """Sums of the buckets ``[start, upto)`` of one comparison (see ``_pooled``)."""

    __slots__ = ("signature", "upto", "candidate", "baseline", "defect_bounds", "score_bounds")

    def __init__(self, signature: tuple[object, ...], start: int) -> None:
        self.signature = signature
        self.upto = start
        self.candidate = (WeightedSums(), WeightedSums())
        self.baseline = (WeightedSums(), WeightedSums())
        # The comparison's intervals are intersected over its life (see sequential.py).
        self.defect_bounds = RunningIntersection()
        self.score_bounds = RunningIntersection()

    def add(self, key: int, cand: _VersionMetric, base: _VersionMetric, matched: bool) -> bool:
        """Pool bucket ``key``; False when it adds nothing."""
        c = cand.buckets.get(key)
        if c is None:
            return False
        if matched:
            b = base.buckets.get(key)
            if b is None:
                return False  # a canary is compared on the minutes both versions answered only
            self.baseline[0].merge(b.defect)
            self.baseline[1].merge(b.score)
        self.candidate[0].merge(c.defect)
        self.candidate[1].merge(c.score)
        return True

    def look(self, boundary: MixtureBoundary, min_evaluations: int) -> None:
        """Intersect the intervals of the sums so far into the running bounds."""
        for bounds, c, b, binary in ((self.defect_bounds, self.candidate[0], self.baseline[0], True),
                                     (self.score_bounds, self.candidate[1], self.baseline[1], False)):
            if c.n >= min_evaluations and b.n >= min_evaluations:
                bounds.update(difference_interval(c, b, boundary, binary=binary))

    def copy(self) -> _Pooled:
        out = _Pooled(self.signature, self.upto)
        out.candidate = (self.candidate[0].copy(), self.candidate[1].copy())
        out.baseline = (self.baseline[0].copy(), self.baseline[1].copy())
        return out


def _latest_before(metric: _VersionMetric, start: int, evaluations: int) -> tuple[WeightedSums, WeightedSums]:
    """The baseline's latest buckets before ``start`` holding about ``evaluations``."""
    defect, score = WeightedSums(), WeightedSums()
    for k in sorted((k for k in metric.buckets if k < start), reverse=True):
        if max(defect.n, score.n) >= evaluations:
            break
        defect.merge(metric.buckets[k].defect)
        score.merge(metric.buckets[k].score)
    return defect, score
