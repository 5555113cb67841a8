"""The offensive-language classifier of ``local_offensive_language``, as plain data.

alt-profanity-check's shipped scikit-learn model (TF-IDF + five calibrated linear SVMs) exported
once by ``tools/export_offensive_model.py`` into ``weights.npz``, and scored with a dictionary
lookup and a dot product (:mod:`.model`): the same probabilities, without scikit-learn at run time.
"""

from __future__ import annotations

__all__: list[str] = []
