# The gateway image for a hub (docker-compose.yml). Multi-arch base: works on a Pi 5.
# Pinned by digest (docker-library/repo-info, python:3.11-slim index of 2026-08-05); refresh
# with scripts/pin-images.sh on a machine with Docker.
FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff
WORKDIR /app
# Dependencies first (a layer that survives code changes), all hash-checked from the locks:
# build.lock (setuptools) before anything builds, then runtime.lock without build isolation,
# so pip fetches nothing that is not pinned by hash.
COPY requirements/build.lock requirements/runtime.lock ./requirements/
RUN pip install --no-cache-dir --disable-pip-version-check --require-hashes \
      -r requirements/build.lock \
 && pip install --no-cache-dir --disable-pip-version-check --require-hashes \
      --no-build-isolation -r requirements/runtime.lock
COPY pyproject.toml README.md ./
COPY healthgw ./healthgw
COPY gateway ./gateway
COPY agents ./agents
COPY simulators ./simulators
# Only the broker configs: mosquitto/auth (password hashes, ACL) must never be in an image.
COPY mosquitto/*.conf ./mosquitto/
COPY examples ./examples
RUN pip install --no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation . \
 && useradd --system --home /data healthgw && mkdir -p /data && chown healthgw /data \
 && chmod 0700 /data
USER healthgw
ENV HEALTHGW_DATA_DIR=/data HEALTHGW_API_HOST=0.0.0.0
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/healthz').status == 200 else 1)"
ENTRYPOINT ["healthgw"]
CMD ["run"]
