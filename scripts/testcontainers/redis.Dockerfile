# The Redis image the tests' testcontainers path asks for (`redis:7-alpine`, see
# test/support/redis-source.ts), built here because no image can be pulled on these machines:
# Debian bookworm's redis-server 7.0 from apt on the stand-in base (scripts/container-env.sh).
# scripts/verify-testcontainers.sh builds it and tags it docker.io/library/redis:7-alpine.
ARG BASE_IMAGE=docker.io/library/node:24-bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data
COPY --chmod=0755 redis-entrypoint.sh /usr/local/bin/redis-entrypoint.sh
WORKDIR /data
USER redis
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/redis-entrypoint.sh"]
CMD ["redis-server"]
