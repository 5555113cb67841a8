"""rag-monitor: an online monitoring sidecar for RAG and chat applications."""

__version__ = "0.1.0"
