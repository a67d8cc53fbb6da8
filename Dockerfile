# syntax=docker/dockerfile:1
#
# The Sundial operator image: Debian bookworm's Python 3.11 and a virtualenv installed from the hash-pinned
# lock files in tools/image/ (pip --require-hashes --no-deps: nothing is resolved at build time).
#
# Without Docker (what CI and `make image` do, no registry needed):
#   make image        bases made with mmdebstrap, built with podman, an OCI archive written; see tools/image/
# With Docker:
#   docker build -t sundial:dev .
#   docker run --rm sundial:dev --help
#
# Two stages:
#   builder  builds the sundial wheel (setuptools and wheel from build-requirements.lock) and installs it
#            with every runtime dependency (requirements.lock) into the virtualenv /opt/sundial;
#   runtime  python3 only (no pip, no compilers, no apt lists), /opt/sundial copied from the builder, the
#            numeric non-root user 65532 so that `runAsNonRoot: true` can be verified by the kubelet.
#
# BUILDER_BASE and RUNTIME_BASE default to Debian's bookworm-slim (pin them by digest if you like:
# --build-arg RUNTIME_BASE=debian:bookworm-slim@sha256:...). `make image` passes its own mmdebstrap bases,
# which already hold the Debian packages, so every apt-get step below is skipped there. It also puts the
# locked wheels into the context at wheels/ and builds without network; with Docker, pip downloads them
# (and checks every hash).

ARG BUILDER_BASE=debian:bookworm-slim
ARG RUNTIME_BASE=debian:bookworm-slim

# ---------------------------------------------------------------------------------------------------
FROM ${BUILDER_BASE} AS builder

ARG SOURCE_DATE_EPOCH=0
# PYTHONHASHSEED and SOURCE_DATE_EPOCH make the wheel and the compiled bytecode reproducible (with
# SOURCE_DATE_EPOCH set, py_compile writes hash-checked .pyc files, independent of file times).
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONHASHSEED=0 \
    SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH}

RUN if ! dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q 'ok installed'; then \
      apt-get update \
      && apt-get install -y --no-install-recommends python3 python3-venv \
      && rm -rf /var/lib/apt/lists/*; \
    fi

COPY . /src/
WORKDIR /src
# Build tools in their own virtualenv (from the lock), the sundial wheel, then the runtime virtualenv:
# every dependency from the lock with its hash, then sundial itself without dependencies.
RUN set -eu; \
    if [ -d wheels ]; then set -- --no-index --find-links /src/wheels; fi; \
    python3 -m venv /build; \
    /build/bin/pip install --quiet "$@" --require-hashes --no-deps --only-binary=:all: \
        -r tools/image/build-requirements.lock; \
    /build/bin/pip wheel --quiet --no-index --no-deps --no-build-isolation --wheel-dir /dist .; \
    python3 -m venv --without-pip /opt/sundial; \
    /build/bin/pip --python /opt/sundial/bin/python install --quiet "$@" --require-hashes --no-deps \
        --only-binary=:all: --compile -r tools/image/requirements.lock; \
    /build/bin/pip --python /opt/sundial/bin/python install --quiet --no-index --no-deps --compile \
        /dist/sundial-*.whl; \
    /opt/sundial/bin/python -c 'import sundial.cli.commands.main, uvloop, orjson, pydantic_core'; \
    ! /opt/sundial/bin/python -c 'import sundial.sandbox' 2>/dev/null

# ---------------------------------------------------------------------------------------------------
FROM ${RUNTIME_BASE} AS runtime

ARG VERSION=0.0.0
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z

LABEL org.opencontainers.image.title="sundial" \
      org.opencontainers.image.description="Kubernetes-native distributed job scheduler (operator)" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/sundial/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Debian's bookworm-slim: python3 and the user; the mmdebstrap base has both already.
RUN if ! command -v python3 >/dev/null 2>&1; then \
      apt-get update \
      && apt-get install -y --no-install-recommends python3 \
      && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin; \
    fi \
 && if ! grep -q '^sundial:' /etc/passwd; then \
      echo 'sundial:x:65532:65532:sundial:/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
      && echo 'sundial:x:65532:' >> /etc/group; \
    fi

COPY --from=builder /opt/sundial /opt/sundial

USER 65532:65532
WORKDIR /tmp

# 8080: Prometheus metrics; 8081: /healthz and /readyz; 9443: the admission webhook (when enabled).
EXPOSE 8080 8081 9443

ENTRYPOINT ["/opt/sundial/bin/sundial", "run"]
