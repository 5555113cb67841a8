# The rag-monitor image the Helm chart runs (helm/rag-monitor): the `rag-monitor` console script,
# uid 10001, fit for a read-only root filesystem (bytecode compiled at build time, nothing
# written at run time outside the volumes the chart mounts at /var/lib/rag-monitor and /tmp).
#   docker build -t registry.example.com/rag-monitor:0.1.0 .
# On its own (`docker run`, compose.yaml) it starts with monitor/container.yaml: every port bound
# on all interfaces, so a published port is reachable, and the receivers behind a bearer token:
#   docker run -p 4318:4318 -p 4317:4317 -p 9464:9464 -e RAG_MONITOR_RECEIVERS__BEARER_TOKEN=<token> \
#     -e RAG_MONITOR_ADMIN__BEARER_TOKEN=<token> registry.example.com/rag-monitor:0.1.0
# Without a token it refuses to start and says which variable to set. The chart passes its own
# `serve -c <file>`, which replaces this default entirely.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY monitor ./monitor
COPY samplers ./samplers
COPY exporters ./exporters
RUN python -m venv /opt/rag-monitor \
 && /opt/rag-monitor/bin/pip install --no-cache-dir --compile . \
 && /opt/rag-monitor/bin/python -m compileall -q /opt/rag-monitor

FROM python:3.11-slim
COPY --from=build /opt/rag-monitor /opt/rag-monitor
COPY monitor/container.yaml /etc/rag-monitor/config.yaml
ENV PATH=/opt/rag-monitor/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    RAG_MONITOR_CONFIG=/etc/rag-monitor/config.yaml
RUN groupadd --system --gid 10001 rag-monitor \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin rag-monitor \
 && install -d -o 10001 -g 10001 /var/lib/rag-monitor
# Numeric, so Kubernetes can verify runAsNonRoot.
USER 10001:10001
WORKDIR /var/lib/rag-monitor
EXPOSE 4317 4318 9464
ENTRYPOINT ["rag-monitor"]
CMD ["serve"]
