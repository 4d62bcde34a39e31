#!/usr/bin/env bash
# Runs every benchmark whose figures BENCHMARKS.md shows and prints each one's part of
# it; with --write, puts them into BENCHMARKS.md in place of what is there, so that it
# shows exactly what was printed, with the date.
#
#   benches/figures.sh [--write] [BENCH ...]     (default: all of them; about 45 minutes)
#   benches/figures.sh --write --saved [BENCH ...]   writes what the last run printed
#                                                (target/figures/BENCH.md), runs nothing
#
# Each bench prints its part between <!-- figures:NAME begin --> and
# <!-- figures:NAME end --> (benches/common/mod.rs, print_figures); BENCHMARKS.md holds
# the same markers, and the prose around them explains the figures without repeating them.
# Where a figure is CPU-bound and valgrind is installed, the bench adds callgrind's
# instruction count, which is the same on a noisy machine as on a quiet one.
set -euo pipefail
cd "$(dirname "$0")/.."
page=BENCHMARKS.md

write=0
saved=0
benches=()
for arg in "$@"; do
  case "$arg" in
    --write) write=1 ;;
    --saved) saved=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "figures.sh: unknown option $arg (use --write and bench names)" >&2; exit 2 ;;
    *) benches+=("$arg") ;;
  esac
done
if [ ${#benches[@]} -eq 0 ]; then
  benches=(durable_once postgres fleet reconcile audit approvals tui mcp)
fi

out=target/figures
mkdir -p "$out"

bench_binary() {
  cargo bench --bench "$1" --no-run 2>&1 \
    | sed -n "s#.*Executable benches/$1.rs (\(.*\))#\1#p" | tail -1
}

for bench in "${benches[@]}"; do
  echo "== $bench" >&2
  if [ $saved = 0 ] && [ "$bench" = mcp ]; then
    # The proxy's bench calls the fake upstream, an example cargo bench does not build.
    cargo build --release --example mcp_upstream >&2
  fi
  if [ $saved = 0 ]; then
    cargo bench --bench "$bench" 2>&1 | tee "$out/$bench.txt" >&2
    sed -n "/<!-- figures:$bench begin -->/,/<!-- figures:$bench end -->/p" "$out/$bench.txt" \
      > "$out/$bench.md"
  fi
  if [ ! -s "$out/$bench.md" ]; then
    echo "figures.sh: $bench printed no figures block" >&2
    exit 1
  fi
  cat "$out/$bench.md"
  if [ $write = 1 ]; then
    if ! grep -q "<!-- figures:$bench begin -->" "$page"; then
      echo "figures.sh: $page has no place for $bench's figures (<!-- figures:$bench begin -->)" >&2
      exit 1
    fi
    BLOCK="$out/$bench.md" NAME="$bench" perl -0pi -e '
      BEGIN { local $/; open my $f, "<", $ENV{BLOCK} or die "$!"; $new = <$f>; $new =~ s/\n\z//; }
      s/<!-- figures:\Q$ENV{NAME}\E begin -->.*?<!-- figures:\Q$ENV{NAME}\E end -->/$new/s
        or die "no block for $ENV{NAME}\n";
    ' "$page"
    echo "$page: $bench's figures written" >&2
  fi
done
