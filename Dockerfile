# syntax=docker/dockerfile:1
# One image for the ragpulse API and its workers.
#   API (default):  docker run IMAGE                       -> python -m service on 0.0.0.0:8080
#   worker:         docker run IMAGE python -m worker
# The API refuses to listen on 0.0.0.0 without API keys: give it RAGPULSE_API_KEYS_FILE (or
# RAGPULSE_API_KEYS), or RAGPULSE_ALLOW_OPEN=1 to accept an open API. deploy/README.md has the rest.
#
# No HEALTHCHECK here: the API and the worker need different checks (HTTP /readyz versus a Redis look-up),
# so each deployment declares its own (deploy/docker-compose.yml, deploy/k8s/).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Build inputs only (see .dockerignore): the metadata, then the four packages pyproject.toml installs.
COPY pyproject.toml README.md ./
COPY ragpulse ./ragpulse
COPY dispatch ./dispatch
COPY service ./service
COPY worker ./worker
RUN pip install --no-cache-dir .

FROM ${PYTHON_IMAGE} AS runtime
# A fixed numeric uid/gid, so Kubernetes' runAsNonRoot can verify it (deploy/k8s uses 10001 too).
RUN groupadd --system --gid 10001 ragpulse \
    && useradd --system --uid 10001 --gid ragpulse --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin ragpulse
COPY --from=builder /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    RAGPULSE_HOST=0.0.0.0 \
    RAGPULSE_PORT=8080
# The packages live in the venv, not here: an empty, unwritable working directory.
WORKDIR /app
USER 10001:10001
EXPOSE 8080
CMD ["python", "-m", "service"]
