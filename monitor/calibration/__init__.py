"""Calibration: how well the judge agrees with human labels (``rag-monitor calibrate``).

``agreement`` holds the statistics (pure functions), ``labels`` reads a labelled set, ``run``
judges it and compares, ``report`` prints and serialises the comparison.
"""
