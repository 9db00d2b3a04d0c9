# syntax=docker/dockerfile:1
# Build stage: wheels for the operator and its dependencies (compilers stay here).
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY baseten_operator ./baseten_operator
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --upgrade pip \
 && /opt/venv/bin/pip install . \
 && /opt/venv/bin/pip check

# Final stage: the interpreter and the virtualenv, nothing else; runs as a non-root UID.
FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp
COPY --from=build /opt/venv /opt/venv
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["baseten-operator", "run"]
