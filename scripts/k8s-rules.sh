#!/usr/bin/env bash
# Regenerates docker/kubernetes/psprobe-prometheusrule.yaml from
# grafana/prometheus/psprobe.rules.yml (the PrometheusRule wraps the same groups).
set -euo pipefail
cd "$(dirname "$0")/.."
out=docker/kubernetes/psprobe-prometheusrule.yaml
{
  sed -n '1,/^spec:$/p' "$out"
  sed -n '/^groups:/,$p' grafana/prometheus/psprobe.rules.yml | sed 's/^/  /'
} >"$out.tmp"
mv "$out.tmp" "$out"
