#!/usr/bin/env bash
# Builds the Docker image with podman and checks it for real, on this machine, as root:
#   - lints the Dockerfile (dockerfile-utils);
#   - installs podman & co. with apt-get when missing, configures them in a temp folder and builds
#     the stand-in base image for node:24-bookworm-slim when absent (cached in
#     ~/.cache/concordance-worker, see scripts/container-env.sh);
#   - builds the image (podman build --pull=never --format docker), the host's CA bundle mounted
#     for npm at build time only;
#   - checks its labels, contents (no sources, tests or CA bundle) and user (non-root);
#   - runs the simulator, ingest, work and start containers, read-only (--read-only --tmpfs /tmp),
#     against a private redis-server and a webhook receiver on the host (slirp4netns,
#     allow_host_loopback, 10.0.2.2), pushes one record update through the ingest container and
#     waits for its signed result at the receiver, runs the one-shot `status`;
#   - runs `podman healthcheck run` for each role, stops each with SIGTERM (`podman stop`) and
#     checks exit code 0 and the time it took; prints the image size and a summary.
# Exits non-zero on any failure. Everything it starts is stopped at the end. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/use-node.sh >/dev/null 2>&1
source scripts/container-env.sh

IMAGE="${CW_IMAGE:-localhost/concordance-worker:verify}"
STOP_TIMEOUT_S=30 # shutdown.grace_ms (25 s) + 5 s: past it podman would SIGKILL
RUN="cw-verify-$$"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cw-verify-image-XXXXXX")"
containers=()
pids=()
summary=()
failures=0
t_start=$SECONDS

cleanup() {
  local c p
  for c in "${containers[@]}"; do podman rm -f -t 0 "$c" >/dev/null 2>&1 || true; done
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

pass() {
  summary+=("ok    $*")
  cw_log "ok: $*"
}
fail() {
  summary+=("FAIL  $*")
  cw_log "FAIL: $*"
  failures=$((failures + 1))
}
# check DESCRIPTION COMMAND...: records whether COMMAND succeeded.
check() {
  local what="$1"
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
now_ms() { date +%s%3N; }
secret() { node -e "console.log(require('crypto').randomBytes($1).toString('$2'))"; }
http_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }

finish() {
  echo
  echo "verify-image summary (${IMAGE}):"
  printf '  %s\n' "${summary[@]}"
  echo "  total: $((SECONDS - t_start)) s"
  if [ "$failures" -gt 0 ]; then
    local c
    for c in "${containers[@]}"; do
      echo "--- last log lines of $c:" >&2
      podman logs --tail 30 "$c" >&2 2>&1 || true
    done
    if [ -s "$WORK/podman.err" ]; then
      echo "--- podman's errors:" >&2
      tail -n 20 "$WORK/podman.err" >&2
    fi
    echo "verify-image: $failures check(s) failed" >&2
    exit 1
  fi
  echo "verify-image: all checks passed"
}

# --- the Dockerfile -------------------------------------------------------------------------
[ -x node_modules/.bin/dockerfile-utils ] || npm ci --no-audit --no-fund --loglevel=error
check "Dockerfile lint (dockerfile-utils)" node_modules/.bin/dockerfile-utils lint Dockerfile

# --- podman, the base image, the build ------------------------------------------------------
t=$SECONDS
cw_ensure_podman
cw_podman_env "$WORK"
command -v redis-server >/dev/null 2>&1 || bash scripts/ensure-redis.sh >/dev/null
pass "podman $(podman version --format '{{.Client.Version}}') ready ($((SECONDS - t)) s)"

t=$SECONDS
cw_ensure_base_image
# Build layers of sources older than a week are no use as a cache any more.
podman image prune -f --filter until=168h >/dev/null 2>&1 || true
pass "base image $CW_BASE_IMAGE ready ($((SECONDS - t)) s)"

version="$(node -p "require('./package.json').version")"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
source_url="$(git remote get-url origin 2>/dev/null || echo unknown)"
mapfile -t ca_options < <(cw_ca_build_options "$WORK")
# buildah 1.28 keys its layer cache on the LABEL line as written, not on the build arguments in
# it: a cached LABEL step would keep an older revision. The same labels given with --label are
# applied when the image is committed, whatever was cached. (Docker's builder needs only the
# build arguments.)
labels=()
for label in "version=$version" "revision=$revision" "source=$source_url"; do
  labels+=(--label "org.opencontainers.image.$label")
done
t=$SECONDS
if podman build --pull=never --format docker "${ca_options[@]}" \
  --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  --build-arg "SOURCE_URL=$source_url" "${labels[@]}" -t "$IMAGE" . >"$WORK/build.log" 2>&1; then
  build_s=$((SECONDS - t))
  pass "image built in ${build_s} s"
else
  tail -n 40 "$WORK/build.log" >&2
  fail "podman build"
  finish
fi

# --- the image as built ---------------------------------------------------------------------
label() { podman image inspect --format "{{index .Labels \"org.opencontainers.image.$1\"}}" "$IMAGE"; }
check "labels: version $version, revision, licenses Apache-2.0, title, description, source" \
  test "$(label version)|$(label revision)|$(label licenses)|$(label title)" = \
  "$version|$revision|Apache-2.0|concordance-worker" -a -n "$(label description)" -a -n "$(label source)"
check "image user is numeric and non-root (1000:1000)" \
  test "$(podman image inspect --format '{{.Config.User}}' "$IMAGE")" = 1000:1000
has_healthcheck() { podman image inspect "$IMAGE" | grep -q '"/app/bin/healthcheck.js"'; }
check "HEALTHCHECK kept (docker format)" has_healthcheck
ca_sum="$(sha256sum /etc/ssl/certs/ca-certificates.crt 2>/dev/null | cut -d' ' -f1 || true)"
contents_ok() {
  podman run --rm --health-interval=disable --network none --user 0 --entrypoint sh "$IMAGE" -c "
    test -f /app/dist/src/cli/main.js && test -f /app/config/default.yaml &&
    test -d /app/data/ccsr && test -f /app/LICENSE && test ! -e /app/src && test ! -e /app/test &&
    test ! -e /app/node_modules/typescript && test ! -e /app/node_modules/vitest &&
    test -z \"\$(find /app/dist -name '*.test.*' -print -quit)\" && test ! -e /root/.npmrc &&
    { test ! -e /etc/ssl/certs/ca-certificates.crt ||
      test \"\$(sha256sum /etc/ssl/certs/ca-certificates.crt | cut -d' ' -f1)\" != '$ca_sum'; }" \
    2>>"$WORK/podman.err"
}
check "contents: built copy, config, data, LICENSE; no sources, tests, npmrc or build-time CA bundle" \
  contents_ok
check "--version prints $version" \
  test "$(podman run --rm --health-interval=disable --network none --read-only "$IMAGE" --version \
    2>>"$WORK/podman.err")" = "$version"

# --- Redis, the webhook receiver, the containers --------------------------------------------
redis_port="$(cw_free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --protected-mode no --save '' \
  --appendonly no --maxmemory-policy noeviction >"$WORK/redis.log" 2>&1 &
pids+=($!)
webhook_secret="whsec_$(secret 24 base64)"
WEBHOOK_SECRET="$webhook_secret" node scripts/support/webhook-sink.ts >"$WORK/webhook.jsonl" \
  2>"$WORK/webhook.err" &
pids+=($!)
for _ in $(seq 100); do
  redis-cli -p "$redis_port" ping >/dev/null 2>&1 && [ -s "$WORK/webhook.jsonl" ] && break
  sleep 0.1
done
webhook_port="$(head -n 1 "$WORK/webhook.jsonl" | node -p 'new URL(JSON.parse(require("fs").readFileSync(0))["url"]).port')"

token="$(secret 24 base64)"
api_key="$(secret 20 hex)"
sim_port="$(cw_free_port)"
ingest_port="$(cw_free_port)"
# The receiver is on the host, 10.0.2.2 from inside a container: not the container's loopback, so
# its plain http:// URL needs WEBHOOK_ALLOW_PLAIN_HTTP (the work and start roles warn about it).
cat >"$WORK/env" <<EOF
REDIS_URL=redis://10.0.2.2:$redis_port
REDIS_PREFIX={cwimg}
SERVICE_BASE_URL=http://10.0.2.2:$sim_port
SERVICE_API_KEY=$api_key
INGEST_TOKENS=$token
CROSSWALK_KEY=$(secret 32 base64)
WEBHOOK_URL=http://10.0.2.2:$webhook_port/hooks/concordance
WEBHOOK_ALLOW_PLAIN_HTTP=true
WEBHOOK_SECRET=$webhook_secret
LOG_LEVEL=info
EOF

# run_role NAME [podman run options...] -- ARGS...: a detached, read-only container.
declare -A health_port
run_role() {
  local name="$1"
  shift
  local opts=()
  while [ "$1" != -- ]; do
    opts+=("$1")
    shift
  done
  shift
  health_port[$name]="$(cw_free_port)"
  podman run -d --name "$RUN-$name" --read-only --tmpfs /tmp \
    --network slirp4netns:allow_host_loopback=true --http-proxy=false \
    --health-interval=disable --env-file "$WORK/env" \
    -p "127.0.0.1:${health_port[$name]}:9464" "${opts[@]}" "$IMAGE" "$@" \
    >/dev/null 2>>"$WORK/podman.err"
  containers+=("$RUN-$name")
}
run_role simulator -p "127.0.0.1:$sim_port:8090" -- simulator --host 0.0.0.0 --port 8090 --latency 200-400
run_role ingest -p "127.0.0.1:$ingest_port:8080" -- ingest
run_role work -- work
# `start` on a prefix of its own, so that the query above is the work container's.
run_role start -e 'REDIS_PREFIX={cwimg-start}' -- start

# ready_all: every role's /readyz on its health port answers 200 (within 120 s).
roles=(simulator ingest work start)
deadline=$((SECONDS + 120))
for role in "${roles[@]}"; do
  until [ "$(http_status "http://127.0.0.1:${health_port[$role]}/readyz")" = 200 ]; do
    if [ $SECONDS -gt $deadline ] ||
      [ "$(podman inspect --format '{{.State.Running}}' "$RUN-$role")" != true ]; then
      podman logs --tail 20 "$RUN-$role" >&2 || true
      break
    fi
    sleep 0.5
  done
  check "$role: /readyz 200 on the health port (9464 in the container)" \
    test "$(http_status "http://127.0.0.1:${health_port[$role]}/readyz")" = 200
done

# --- one record update through the ingest container, its signed result at the receiver -----
auth=(-H "authorization: Bearer $token")
preset="$(http_status -X PUT "${auth[@]}" "http://127.0.0.1:$ingest_port/v1/patients/MRN-IMAGE-1/presets/END002")"
update="$(http_status "${auth[@]}" -H 'content-type: application/json' \
  "http://127.0.0.1:$ingest_port/v1/record-updates" -d '{
    "patient_id": "MRN-IMAGE-1", "event_id": "evt-image-1", "changes": ["Condition"],
    "assembled_patient": {
      "nodes": [{"id": "c1", "node_type": "condition", "notable": true,
                 "coding": [{"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "E11.9"}]}],
      "relationships": [], "demographics": {"age": 58, "gender": "female"}}}')"
check "ingest container: preset PUT 201/200 and record update 202" \
  test "$([ "$preset" = 201 ] || [ "$preset" = 200 ] && echo ok)|$update" = "ok|202"
delivered() {
  grep -q '"verified":true,"status":204,"type":"concordance.completed","ccsr_category":"END002","query_status":"completed"' \
    "$WORK/webhook.jsonl"
}
t=$(now_ms)
deadline=$((SECONDS + 120))
until delivered || [ $SECONDS -gt $deadline ]; do sleep 0.5; done
check "work container: the signed result (concordance.completed, END002) verified at the host's receiver ($(($(now_ms) - t)) ms after the 202)" delivered
check "no request failed signature verification at the receiver" \
  test -z "$(grep '"verified":false' "$WORK/webhook.jsonl" || true)"

# --- one-shot command, health checks, user, read-only root ----------------------------------
status_ok() {
  podman run --rm --read-only --tmpfs /tmp --network slirp4netns:allow_host_loopback=true \
    --http-proxy=false --health-interval=disable --env-file "$WORK/env" "$IMAGE" status --json \
    >"$WORK/status.json" 2>>"$WORK/podman.err"
}
check "status --json (one-shot) exits 0" status_ok
for role in "${roles[@]}"; do
  c="$RUN-$role"
  check "$role: podman healthcheck run: healthy" podman healthcheck run "$c"
  check "$role: runs as uid $(podman exec "$c" id -u 2>/dev/null) (non-root), read-only root" \
    test "$(podman exec "$c" id -u)|$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$c")" = "1000|true"
  check "$role: cannot write to /app, can write to /tmp" \
    podman exec "$c" sh -c '! touch /app/probe 2>/dev/null && touch /tmp/probe'
done

# --- SIGTERM: a clean exit, and how long it took ---------------------------------------------
stop_times=()
for role in "${roles[@]}"; do
  c="$RUN-$role"
  t=$(now_ms)
  podman stop -t "$STOP_TIMEOUT_S" "$c" >/dev/null 2>>"$WORK/podman.err"
  took=$(($(now_ms) - t))
  code="$(podman inspect --format '{{.State.ExitCode}}' "$c")"
  own="$(podman logs "$c" 2>&1 | grep -o '"shutdown_ms":[0-9]*' | cut -d: -f2 | tail -n 1 || true)"
  stop_times+=("$role ${took} ms${own:+ (process: $own ms)}")
  check "$role: SIGTERM -> exit code $code in ${took} ms${own:+ (its own shutdown: $own ms)}" \
    test "$code" = 0 -a "$took" -lt $((STOP_TIMEOUT_S * 1000))
done

size_bytes="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
base_bytes="$(podman image inspect --format '{{.Size}}' "$CW_BASE_IMAGE")"
pass "image size: $((size_bytes / 1000000)) MB ($(((size_bytes - base_bytes) / 1000000)) MB over the base's $((base_bytes / 1000000)) MB)"
finish
