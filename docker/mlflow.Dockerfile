# syntax=docker/dockerfile:1
# The MLflow tracking server of k8s/ (and the bootstrap Job's MLflow step): an upstream-style slim
# Python image with only MLflow and the project's `server` extra (basic auth: flask-wtf; PostgreSQL:
# psycopg2-binary; S3/MinIO artifacts: boto3), at the versions pyproject.toml and constraints.txt pin.
# No torch, Ray or CUDA: a few hundred MB instead of several GB, and MLflow upgrades without
# rebuilding the Ray image.
#
#   docker build -f docker/mlflow.Dockerfile -t sentsweep-mlflow:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# mlflow's pin from the project's dependencies plus the `server` extra, constrained like the Ray image.
COPY pyproject.toml constraints.txt ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join([d for d in p['dependencies'] if d.startswith('mlflow')] + p['optional-dependencies']['server']))" \
    > requirements.txt \
 && pip install -c constraints.txt -r requirements.txt \
 && python -c "import mlflow, mlflow.server.auth, flask_wtf, psycopg2, boto3; print('mlflow', mlflow.__version__)" \
 && rm -rf /src

RUN groupadd --gid 1000 mlflow \
 && useradd --uid 1000 --gid 1000 --create-home --home-dir /home/mlflow --shell /usr/sbin/nologin mlflow
ENV HOME=/home/mlflow
WORKDIR /home/mlflow
USER 1000:1000
EXPOSE 5000

CMD ["mlflow", "server", "--help"]
