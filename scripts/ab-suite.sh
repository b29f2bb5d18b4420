# The A/B gate's suite (sourced by scripts/ab-gate.sh and scripts/gate-error-rates.sh): two
# training points and two collective points, small enough that one side's round takes about 4 s
# on two cores. N = 2 only: at N = 3 and 4 two cores are oversubscribed and the spread between
# rounds grows several-fold (docs/measurements.md). Each flag here has existed since long before
# the gate, so an older revision's tpbench runs the same suite.
AB_TRAIN=(sweep --strategies ddp,ring_all_reduce --n_gpus 2 --batch_size 64 --epochs 2
          --train_size 4096 --test_size 500 --seed 1)
AB_COLLECTIVE=(allreduce --algos ring --n_gpus 2 --bytes 64K,4M --iters 50 --warmup 5)

# ab_round TPBENCH DIR NAME: one side's round, DIR/NAME-train.json and DIR/NAME-coll.json; the
# console output is appended to DIR/log. Fails when either command does.
ab_round() {
  local bin=$1 dir=$2 name=$3
  "$bin" "${AB_TRAIN[@]}" --out "$dir/$name-train.json" --overwrite >>"$dir/log" 2>&1 &&
    "$bin" "${AB_COLLECTIVE[@]}" --out "$dir/$name-coll.json" --overwrite >>"$dir/log" 2>&1
}

# ab_positive_int NAME VALUE LIMIT: refuses (exit 2, one line) anything but 1..LIMIT.
ab_positive_int() {
  local name=$1 value=$2 limit=$3
  if ! [[ $value =~ ^[0-9]{1,6}$ ]] || ((10#$value < 1 || 10#$value > limit)); then
    printf '%s: must be a whole number in 1..%s, got %q\n' "$name" "$limit" "$value" >&2
    exit 2
  fi
}
