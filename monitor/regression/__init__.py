"""Regression statistics: release comparisons with confidence sequences and an e-detector.

Pure and clock-injected; see docs/regressions.md for the method.
"""

from monitor.regression.engine import (
    Driver,
    Regression,
    RegressionConfig,
    RegressionEngine,
    ReleaseComparison,
    VersionInfo,
)
from monitor.regression.records import Observation

__all__ = [
    "Driver",
    "Observation",
    "Regression",
    "RegressionConfig",
    "RegressionEngine",
    "ReleaseComparison",
    "VersionInfo",
]
