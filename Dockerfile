# syntax=docker/dockerfile:1
# The base image by digest: a tag moves under you, a digest does not. README, "The image",
# says how to bump it.
ARG PYTHON_IMAGE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

# The wheelhouse: empty here, so pip downloads from the index. An air-gapped build puts in its
# place a directory that `make wheelhouse` filled with every file the locks pin, and tells pip
# to read only there (README, "The image"):
#   --build-context wheelhouse=DIR --build-arg PIP_NO_INDEX=1
FROM scratch AS wheelhouse

# Build stage: every wheel of the runtime closure, hash-checked, plus the operator's own.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_FIND_LINKS=/wheelhouse
ARG PIP_NO_INDEX
WORKDIR /src
COPY --from=wheelhouse / /wheelhouse/
# Pinned, hash-checked build tools: not whatever pip and setuptools the base image carries.
COPY requirements-build.lock requirements.lock ./
RUN python -m pip install --require-hashes --no-deps -r requirements-build.lock
# Every file of the closure must match a hash in the lock; the odd sdist is built with
# the pinned setuptools above (no build isolation: nothing unpinned is fetched).
RUN python -m pip wheel --require-hashes --no-deps --no-build-isolation \
        --wheel-dir /wheels -r requirements.lock
# The operator's wheel: .dockerignore keeps the simulators and the sandbox out of the context.
COPY pyproject.toml README.md ./
COPY baseten_operator ./baseten_operator
RUN python -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
 && python -m venv --without-pip /opt/venv \
 && python -m pip --python /opt/venv/bin/python install --no-index --no-deps /wheels/*.whl \
 && python -m pip --python /opt/venv/bin/python check

# Final stage: the interpreter and the virtualenv; no pip, no setuptools, no compilers, no
# tests, no simulators. Runs as a non-root UID.
FROM ${PYTHON_IMAGE}
RUN python -m pip uninstall --yes pip setuptools wheel \
 && rm -rf /usr/local/lib/python3.11/ensurepip /usr/local/bin/pip*
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp
COPY --from=build /opt/venv /opt/venv
USER 65532:65532
# Metrics (HTTPS) and probes (plain HTTP).
EXPOSE 8443 8081
ENTRYPOINT ["baseten-operator", "run"]
# What the image is (OCI annotations). The version and revision are the build's: `make image`
# adds them (--label org.opencontainers.image.version=... and .revision=...).
LABEL org.opencontainers.image.title="baseten-operator" \
      org.opencontainers.image.source="https://github.com/baseten-operator/baseten-operator" \
      org.opencontainers.image.licenses="Apache-2.0"
