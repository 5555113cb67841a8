# The rag-monitor image the Helm chart runs (helm/rag-monitor): the `rag-monitor` console script,
# uid 10001, fit for a read-only root filesystem (bytecode compiled at build time, nothing
# written at run time outside the volumes the chart mounts at /var/lib/rag-monitor and /tmp).
#   docker build -t registry.example.com/rag-monitor:0.1.0 .
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
ENV PATH=/opt/rag-monitor/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 rag-monitor \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin rag-monitor \
 && install -d -o 10001 -g 10001 /var/lib/rag-monitor
# Numeric, so Kubernetes can verify runAsNonRoot.
USER 10001:10001
WORKDIR /var/lib/rag-monitor
EXPOSE 4317 4318 9464
ENTRYPOINT ["rag-monitor"]
CMD ["serve"]
