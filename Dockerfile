# groupcoord: a wire-compatible Kafka group coordinator, as a container.
#   docker compose up --build      (see docker-compose.yml)
# Stages: `server` (the coordinator), `cluster` (a node of a cluster over PostgreSQL), `clients` (the integration producer and consumers),
# `report` (the Spark job over the coordinator's log; adds a JRE and pyspark).
FROM python:3.11-slim AS server

# No .pyc litter in the image; logs reach `docker logs` unbuffered.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what the package build needs (not .venv, tests or node_modules from a developer's tree).
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY coordinator ./coordinator
COPY schemas ./schemas
COPY spark_jobs ./spark_jobs
# A regular (not editable) install; the `speed` extra brings uvloop.
RUN pip install ".[speed]"

# Run unprivileged; the data dir is the only writable place and a volume.
RUN useradd --system --uid 10001 --home-dir /var/lib/groupcoord groupcoord \
    && mkdir -p /var/lib/groupcoord \
    && chown groupcoord /var/lib/groupcoord
USER groupcoord
VOLUME ["/var/lib/groupcoord"]

# Inside a container the listener must bind all interfaces to be reachable through a published port;
# clients are told to come back on localhost:9092 (override for other hosts).
ENV GROUPCOORD_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    GROUPCOORD_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 \
    GROUPCOORD_LOG_DIRS=/var/lib/groupcoord
EXPOSE 9092

# Healthy once the listener accepts TCP connections (compose uses /readyz on the HTTP listener instead).
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=10 \
    CMD ["python", "-c", "import socket; socket.create_connection(('127.0.0.1', 9092), 2).close()"]

# Exec form: the server is PID 1 and gets SIGTERM from `docker stop` directly (clean shutdown, exit 0).
STOPSIGNAL SIGTERM
ENTRYPOINT ["groupcoord"]
CMD ["serve"]

# ---- a cluster node (docker-compose.cluster.yml): the server plus asyncpg, for coordinator.store.url
FROM server AS cluster
USER root
RUN pip install ".[speed,cluster]"
USER groupcoord

# ---- the integration clients: the same scripts `make integration` runs
FROM server AS clients
USER root
RUN pip install "confluent-kafka>=2.4" "kafka-python==3.0.12"
COPY integration ./integration
USER groupcoord
HEALTHCHECK NONE
ENTRYPOINT []
CMD ["python", "integration/consumers.py", "--help"]

# ---- the report: pyspark needs a Java runtime
FROM server AS report
USER root
RUN apt-get update && apt-get install -y --no-install-recommends default-jre-headless \
    && rm -rf /var/lib/apt/lists/* \
    && pip install ".[spark]"
USER groupcoord
HEALTHCHECK NONE
CMD ["report", "--help"]
