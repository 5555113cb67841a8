"""The LLM judge: an OpenAI-compatible client that is budgeted, retried, timed out and counted."""
