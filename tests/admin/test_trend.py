"""The trend's span and its change marker."""

from __future__ import annotations

from monitor.admin.trend import MIN_SIDE_EVALUATIONS, find_change, trend_seconds
from tests.admin.doubles import NOW, point

WINDOWS = (("5m", 300.0), ("1h", 3600.0))


def test_span_is_the_shortest_window_holding_all_data():
    assert trend_seconds(WINDOWS, NOW - 90, NOW) == ("5m", 300.0)
    assert trend_seconds(WINDOWS, NOW - 300, NOW) == ("5m", 300.0)
    assert trend_seconds(WINDOWS, NOW - 301, NOW) == ("1h", 3600.0)
    assert trend_seconds(WINDOWS, NOW - 99999, NOW) == ("1h", 3600.0)
    assert trend_seconds(WINDOWS, None, NOW) == ("1h", 3600.0)


def test_a_regression_is_marked_where_it_starts():
    points = [point(NOW - 2400 + 100 * i, 20, 1) for i in range(12)] + [point(NOW - 1200 + 100 * i, 20, 10)
                                                                        for i in range(12)]
    change = find_change(points)
    assert change is not None
    assert (change.index, change.start, change.direction) == (12, NOW - 1200, "up")
    assert change.before == 0.05 and change.after == 0.5


def test_a_recovery_is_marked_down():
    points = [point(NOW + i, 30, 15) for i in range(6)] + [point(NOW + 6 + i, 30, 0) for i in range(6)]
    change = find_change(points)
    assert change is not None and change.direction == "down" and change.index == 6


def test_noise_and_thin_data_mark_nothing():
    steady = [point(NOW + i, 20, 2 + (i % 3) - 1) for i in range(24)]
    assert find_change(steady) is None
    # A jump, but with fewer scored turns on one side than the minimum: not enough to say.
    few = MIN_SIDE_EVALUATIONS - 1
    assert find_change([point(NOW, few, 0), point(NOW + 1, few, few)]) is None
    assert find_change([point(NOW, few + 1, 0), point(NOW + 1, few + 1, few + 1)]) is not None
    assert find_change([point(NOW, 0, 0)] * 3) is None and find_change([]) is None
