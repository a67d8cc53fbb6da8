# syntax=docker/dockerfile:1
#
# The Sundial operator image.
#
#   docker build -t sundial:dev .
#   docker run --rm sundial:dev --help
#
# Two stages:
#   builder  builds wheels for Sundial and every dependency (versions pinned in pyproject.toml);
#            compilers live here only, in case a dependency has no wheel for the target platform.
#   runtime  a slim Python with a virtualenv installed from those wheels only (--no-index), no pip in
#            the virtualenv, no compilers, running as the numeric non-root user 65532 so that
#            `runAsNonRoot: true` can be verified by the kubelet.
#
# The base image tag is an ARG so that CI can pin it by digest: --build-arg PYTHON_IMAGE=python:3.12-slim-trixie@sha256:...

ARG PYTHON_IMAGE=python:3.12-slim-trixie

# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Dependencies first (their layer is reused while only operator code changes): pyproject.toml pins
# every runtime dependency with ==, so this wheel set is reproducible.
COPY pyproject.toml README.md ./
COPY operator/ operator/
RUN python -m pip wheel --wheel-dir /wheels .

# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="sundial" \
      org.opencontainers.image.description="Kubernetes-native distributed job scheduler (operator)" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PATH=/opt/sundial/bin:$PATH

# Wheels are bind-mounted from the builder, so they never become a layer of this image.
# Bytecode is compiled at install time: the root filesystem is read-only at run time.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m venv --without-pip /opt/sundial \
 && python -m pip --python /opt/sundial/bin/python install --no-index --find-links=/wheels --compile sundial \
 && groupadd --system --gid 65532 sundial \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin sundial

USER 65532:65532
WORKDIR /tmp

# 8080: Prometheus metrics; 8081: /healthz and /readyz.
EXPOSE 8080 8081

ENTRYPOINT ["/opt/sundial/bin/sundial", "run"]
