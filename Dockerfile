# The gateway image for a hub (docker-compose.yml). Multi-arch base: works on a Pi 5.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY agents ./agents
COPY simulators ./simulators
# Only the broker configs: mosquitto/auth (password hashes, ACL) must never be in an image.
COPY mosquitto/*.conf ./mosquitto/
COPY examples ./examples
RUN pip install --no-cache-dir . && useradd --system --home /data healthgw && mkdir -p /data && chown healthgw /data
USER healthgw
ENV HEALTHGW_DATA_DIR=/data HEALTHGW_API_HOST=0.0.0.0
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/healthz').status == 200 else 1)"
ENTRYPOINT ["healthgw"]
CMD ["run"]
