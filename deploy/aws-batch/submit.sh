#!/usr/bin/env bash
# Register the tilebake job definitions and submit a distributed build on AWS Batch: the shard array
# job, then the publish job that depends on the whole array (it runs only if every shard succeeded).
# Usage: deploy/aws-batch/submit.sh [DIR]   (DIR: the generated JSON, default: this folder)
# Needs the AWS CLI v2 with credentials allowed to use AWS Batch. Prints the two job ids.
set -euo pipefail
dir="${1:-$(dirname "$0")}"
aws batch register-job-definition --cli-input-json "file://$dir/job-definition-shard.json" >/dev/null
aws batch register-job-definition --cli-input-json "file://$dir/job-definition-publish.json" >/dev/null
shards=$(aws batch submit-job --cli-input-json "file://$dir/shard-array-job.json" --query jobId --output text)
publish_json=$(mktemp)
trap 'rm -f "$publish_json"' EXIT
sed "s/SHARD_ARRAY_JOB_ID/$shards/" "$dir/publish-job.json" > "$publish_json"
publish=$(aws batch submit-job --cli-input-json "file://$publish_json" --query jobId --output text)
echo "shards:  $shards"
echo "publish: $publish"
