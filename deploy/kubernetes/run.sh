#!/usr/bin/env bash
# Run a distributed build on Kubernetes with the plain Jobs: the Indexed shard Job, then (only when it
# is Complete) the publish Job. With Argo instead: `argo submit deploy/kubernetes/workflow.yaml -p run=… -p shards=…`.
# Usage: deploy/kubernetes/run.sh [DIR]   (DIR: the generated YAML, default: this folder).
# Needs kubectl and a cluster >= 1.31 (podFailurePolicy GA; backoffLimitPerIndex beta, on by default since 1.29).
set -euo pipefail
dir="${1:-$(dirname "$0")}"

# Wait until Job $1 is Complete (return 0) or Failed (return 1: an index failed with exit 78 or ran out of retries).
wait_job() {
  local state
  while :; do
    state=$(kubectl get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}')
    case " $state" in
      *" Complete "*) return 0 ;;
      *" Failed "*) echo "tilebake: job $1 failed (kubectl describe job $1; kubectl logs job/$1)" >&2; return 1 ;;
    esac
    sleep 15
  done
}

kubectl delete job tilebake-shards tilebake-publish --ignore-not-found
kubectl apply -f "$dir/shard-job.yaml"
wait_job tilebake-shards
kubectl apply -f "$dir/publish-job.yaml"
wait_job tilebake-publish
echo "tilebake: published"
