"""Azure AI Content Safety as a scoring backend for the four severity metrics and groundedness.

``config.py`` the ``evaluation.content_safety`` section · ``client.py`` the service client
(the official ``azure-ai-contentsafety`` SDK for ``text:analyze``, the same SDK pipeline for the
preview ``text:detectGroundedness``) · ``calls.py`` budgets, retries and circuit breaker shared
with the LLM judge's building blocks · ``evaluators.py`` the metric evaluators · ``backend.py``
which metrics the service can score and how they are built.
"""
