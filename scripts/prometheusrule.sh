#!/usr/bin/env bash
# prometheusrule.sh prints the PrometheusRule of
# deploy/overlays/prometheus-operator: deploy/prometheus/alerts.yaml's
# groups under spec.groups.
#
#   scripts/prometheusrule.sh > deploy/overlays/prometheus-operator/prometheusrule.yaml
set -euo pipefail
cd "$(dirname "$0")/.."
cat <<'HEAD'
# Generated from deploy/prometheus/alerts.yaml: spec.groups is that file's
# groups, indented; deploy/deploy_test.go fails when they differ. After
# editing alerts.yaml, regenerate with
#   scripts/prometheusrule.sh > deploy/overlays/prometheus-operator/prometheusrule.yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: matching
  labels:
    release: kube-prometheus-stack
spec:
  groups:
HEAD
sed -n '/^groups:$/,$p' deploy/prometheus/alerts.yaml | tail -n +2 | sed -e 's/^\(.\)/  \1/'
