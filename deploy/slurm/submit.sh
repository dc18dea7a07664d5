#!/bin/bash
# Submit a planned tilebake run to Slurm: an array of n `tilebake shard` tasks and a publish job that
# runs only when every task succeeded (--dependency=afterok, --kill-on-invalid-dep=yes: a failed shard
# cancels it and the current version keeps serving).
#
#   tilebake plan --config config.json --run /shared/run-1 --shards 16
#   deploy/slurm/submit.sh --run /shared/run-1 --out /shared/tiles [--parallel 4] [--wait] [-- SBATCH_ARGS...]
#
# Prints "<array job id> <publish job id>". With --wait it blocks until publish ends (sbatch --wait)
# and exits non-zero unless publish completed (a failed shard cancels publish).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run='' out='' parallel='' wait=0
while [ $# -gt 0 ]; do
  case "$1" in
    --run) run=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --wait) wait=1; shift ;;
    --) shift; break ;;
    *) echo "submit.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$run" ] && [ -n "$out" ] || { echo "submit.sh: --run and --out are required" >&2; exit 2; }
[ -f "$run/run.json" ] || { echo "submit.sh: $run/run.json: not found (run tilebake plan first)" >&2; exit 78; }
n=$(sed -n 's/^ *"n": *\([0-9][0-9]*\).*/\1/p' "$run/run.json" | head -n 1)
[ -n "$n" ] || { echo "submit.sh: $run/run.json: no field \"n\"" >&2; exit 78; }
export TILEBAKE_RUN=$run TILEBAKE_OUT=$out
array="0-$((n - 1))${parallel:+%$parallel}"
shards=$(sbatch --parsable --export=ALL --array="$array" "$@" "$here/shard.sbatch")
shards=${shards%%;*}
if [ "$wait" = 1 ]; then
  rc=0
  pub=$(sbatch --wait --parsable --export=ALL --dependency="afterok:$shards" --kill-on-invalid-dep=yes "$@" "$here/publish.sbatch") || rc=$?
  pub=${pub%%;*}
  echo "$shards $pub"
  # sbatch --wait exits 0 for a job cancelled before it ran (a failed shard invalidated its dependency).
  state=$(scontrol -o show job "$pub" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true)
  if [ "$rc" -ne 0 ] || [ "$state" != COMPLETED ]; then
    echo "submit.sh: publish job $pub ended ${state:-unknown} (exit $rc); shard array $shards: see its task logs" >&2
    exit $((rc != 0 ? rc : 1))
  fi
else
  pub=$(sbatch --parsable --export=ALL --dependency="afterok:$shards" --kill-on-invalid-dep=yes "$@" "$here/publish.sbatch")
  echo "$shards ${pub%%;*}"
fi
