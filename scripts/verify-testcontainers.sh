#!/usr/bin/env bash
# Runs one Redis-backed integration test file through the tests' testcontainers path for real:
# podman's Docker-compatible API (`podman system service`) as DOCKER_HOST, the Redis image that
# test/support/redis-source.ts asks for (`redis:7-alpine`) built here from the stand-in Debian
# base with Debian's redis-server (scripts/testcontainers/redis.Dockerfile), the reaper disabled
# (TESTCONTAINERS_RYUK_DISABLED=true). Checks that the global setup took that path ("tests use
# Redis from testcontainers") and that the file passed; stops the API service at the end.
# Run as root after scripts/verify-image.sh (it shares its podman set-up and base image).
# CW_TC_TEST_FILE picks another test file.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/use-node.sh >/dev/null 2>&1
source scripts/container-env.sh

TEST_FILE="${CW_TC_TEST_FILE:-test/integration/ingest/record-updates.test.ts}"
REDIS_IMAGE=docker.io/library/redis:7-alpine
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cw-testcontainers-XXXXXX")"
service_pid=
t_start=$SECONDS

cleanup() {
  if [ -n "$service_pid" ]; then
    kill "$service_pid" 2>/dev/null || true
    wait "$service_pid" 2>/dev/null || true
  fi
  # Containers testcontainers left (the reaper is off): only those of this image.
  podman ps -aq --filter "ancestor=$REDIS_IMAGE" 2>/dev/null | xargs -r podman rm -f -t 0 >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

cw_ensure_podman
cw_podman_env "$WORK"
cw_ensure_base_image

t=$SECONDS
mapfile -t ca_options < <(cw_ca_build_options "$WORK")
if ! podman build --pull=never --format docker "${ca_options[@]}" \
  --build-arg "BASE_IMAGE=$CW_BASE_IMAGE" -f scripts/testcontainers/redis.Dockerfile \
  -t "$REDIS_IMAGE" scripts/testcontainers >"$WORK/build.log" 2>&1; then
  tail -n 30 "$WORK/build.log" >&2
  echo "verify-testcontainers: building $REDIS_IMAGE failed" >&2
  exit 1
fi
build_s=$((SECONDS - t))
cw_log "$REDIS_IMAGE ready ($build_s s)"

t=$SECONDS
socket="$WORK/podman.sock"
podman system service --time=0 "unix://$socket" >"$WORK/service.log" 2>&1 &
service_pid=$!
for _ in $(seq 100); do
  [ "$(curl -s --max-time 2 --unix-socket "$socket" http://d/_ping || true)" = OK ] && break
  sleep 0.1
done
if [ "$(curl -s --max-time 2 --unix-socket "$socket" http://d/_ping || true)" != OK ]; then
  cat "$WORK/service.log" >&2
  echo "verify-testcontainers: the podman API service did not answer" >&2
  exit 1
fi
socket_s=$((SECONDS - t))
cw_log "podman API service on unix://$socket ($socket_s s)"

t=$SECONDS
status=0
DOCKER_HOST="unix://$socket" TESTCONTAINERS_RYUK_DISABLED=true \
  npx vitest run "$TEST_FILE" >"$WORK/vitest.log" 2>&1 || status=$?
test_s=$((SECONDS - t))
tail -n 15 "$WORK/vitest.log"
if ! grep -q 'tests use Redis from testcontainers' "$WORK/vitest.log"; then
  echo "verify-testcontainers: the tests did not take the testcontainers path" >&2
  grep -m 5 -i 'tests use Redis\|error' "$WORK/vitest.log" >&2 || true
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "verify-testcontainers: $TEST_FILE failed (exit $status)" >&2
  exit 1
fi
echo "verify-testcontainers: $TEST_FILE passed on Redis from testcontainers" \
  "(image $build_s s, API service $socket_s s, test run $test_s s; total $((SECONDS - t_start)) s)"
