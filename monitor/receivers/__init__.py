"""OTLP receivers (HTTP and gRPC), the body decoder and the optional forwarder."""
