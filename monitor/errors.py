"""Error classes shared by the stages; mapped to exit codes and HTTP/gRPC codes only at the edge."""

from __future__ import annotations

__all__ = ["ConfigError", "SecretFileError", "DecodeError", "PayloadTooLarge", "UnsupportedMediaType"]


class ConfigError(Exception):
    """The configuration is invalid. The message names the offending key(s)."""


class SecretFileError(ConfigError, ValueError):
    """A secret named by the configuration (``*_file``) cannot be read at start; the message names the
    key and the file. A ``ValueError`` too, for callers of the resolvers that caught that before."""


class DecodeError(Exception):
    """An OTLP body that cannot be decoded (permanent: the client must not retry it)."""


class PayloadTooLarge(Exception):
    """A body over the configured compressed or decompressed limit."""


class UnsupportedMediaType(Exception):
    """A Content-Type or Content-Encoding the receiver does not speak."""
