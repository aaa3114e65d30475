# Sourced by scripts/bench.sh and scripts/bench_admin.sh: a throwaway work directory, the
# processes a run starts (append their pids to `pids`), and one cleanup that stops them and
# removes the directory however the script ends. Needs `bench` (the psprobe-bench binary).
#   work_dir PREFIX       sets `work` to a new directory /tmp/PREFIX-XXXXXX
#   start_mariadb OPT...  starts the throwaway mariadbd (psprobe-bench mariadb, account
#                         $db_user/$db_pass, database sbtest) with more mariadbd options; sets
#                         db_port and db_pid
pids=()
work_dir() { work="$(mktemp -d "/tmp/$1-XXXXXX")"; }
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
    # mariadbd is not this shell's child (psprobe-bench started it): wait until it is gone.
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  [ -z "${work:-}" ] || rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_mariadb() {
  local started
  started="$("$bench" mariadb --dir "$work/db" --user "$db_user" --password "$db_pass" -- "$@")" ||
    exit 1
  read -r db_port db_pid <<<"$started"
  pids+=("$db_pid")
}
