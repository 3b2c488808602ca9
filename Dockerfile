# concordance-worker: one image for every role (ingest, work, start, simulator and the one-shot
# commands). Build: docker build -t concordance-worker . (see the README, "Run the image").
#
# The base image is a build argument so that production can pin a digest, e.g.
#   --build-arg NODE_IMAGE=node:24-bookworm-slim@sha256:<digest>
ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: every dependency, the TypeScript compiled into dist/ ------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workers ./workers
RUN npm run build

# --- prod-deps: production dependencies only ---------------------------------------------------
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund --loglevel=error

# --- the image: the built copy, production dependencies, config, data, LICENSE -----------------
FROM ${NODE_IMAGE}
ARG VERSION=unknown
ARG REVISION=unknown
ARG SOURCE_URL=unknown
LABEL org.opencontainers.image.title="concordance-worker" \
      org.opencontainers.image.description="Runs preset concordance queries against the Clinical Graph Service whenever a patient's record changes, and hands the results back to the hospital." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE_URL}"
ENV NODE_ENV=production \
    METRICS_PORT=9464
WORKDIR /app
# Owned by root and read-only to the process: it writes nothing but logs (standard error).
COPY package.json package-lock.json LICENSE ./
COPY bin ./bin
COPY config ./config
COPY data ./data
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The node user of the node images (uid 1000), numeric so that runAsNonRoot can check it.
USER 1000:1000
# 8080 ingest API, 2575 MLLP, 9464 health port of every role (/healthz, /readyz, /metrics),
# 8090 the simulator.
EXPOSE 8080 2575 9464 8090
# /healthz on the health port: one check for every long-running role (node itself: no curl here).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "/app/bin/healthcheck.js"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/bin/concordance-worker.js"]
CMD ["--help"]
