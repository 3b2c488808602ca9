#!/usr/bin/env node
// The image's HEALTHCHECK: exits 0 when GET http://127.0.0.1:$METRICS_PORT/healthz answers 200
// (every long-running role serves it on its health port), else 1. Plain Node, no dependency.
/* global fetch, AbortSignal */
const port = process.env.METRICS_PORT || '9464';
try {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`, {
    signal: AbortSignal.timeout(4_000),
  });
  process.exitCode = response.status === 200 ? 0 : 1;
} catch {
  process.exitCode = 1;
}
