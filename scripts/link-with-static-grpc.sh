#!/usr/bin/env bash
# Link launcher of the fleetprof CLI (RULE_LAUNCH_LINK, client/CMakeLists.txt): runs the link
# command CMake wrote with gRPC, protobuf, Abseil, upb, re2 and c-ares taken from their static
# archives (Debian's -dev packages ship both) instead of their shared objects.
#
# Why: `fleetprof analyze` is a short-lived command whose cost is meant to be reading the trace.
# Linked against 61 shared objects, the dynamic loader spent ~7 ms of every run binding about
# 19,000 C++ symbols before main (perf: _dl_relocate_object, do_lookup_x); linked this way a
# run starts in ~3 ms (bench/analyze_vs_scan.py). The daemons start once and stay shared.
#
# Each such library is replaced where CMake placed it, and all libraries are wrapped in one
# --start-group so the archives' mutual references resolve whatever the order. A library
# without an archive stays shared; the test cli_links_grpc_protobuf_and_abseil_statically
# (tests/client) checks that `ldd bin/fleetprof` names none of these libraries, so a partial
# (mixed static and shared) link cannot pass unnoticed.
set -euo pipefail

static_archive() {  # prints the .a beside a matching shared object, or nothing
  local lib=$1 base
  case "$(basename "$lib")" in
    libgrpc*.so* | libgpr.so* | libupb.so* | libaddress_sorting.so* | libprotobuf.so* | \
      libabsl_*.so* | libre2.so* | libcares.so*) ;;
    *) return 0 ;;
  esac
  base=${lib%%.so*}
  [[ -f "$base.a" ]] && printf '%s\n' "$base.a"
  return 0
}

args=()
grouped=false
absl_dir=""
for arg in "$@"; do
  archive=""
  case "$arg" in
    /*.so | /*.so.*) archive=$(static_archive "$arg") ;;
    -lre2 | -lcares)
      for dir in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib; do
        [[ -f "$dir/lib${arg#-l}.a" ]] && archive="$dir/lib${arg#-l}.a" && break
      done
      ;;
  esac
  # The first library (a path to a .a/.so or a -l) opens the group; objects come before it.
  if ! $grouped && [[ "$arg" == *.a || "$arg" == *.so || "$arg" == *.so.* || "$arg" == -l* ]]; then
    args+=("-Wl,--start-group")
    grouped=true
  fi
  if [[ -n "$archive" ]]; then
    args+=("$archive")
    [[ "$archive" == */libabsl_* ]] && absl_dir=$(dirname "$archive")
  else
    args+=("$arg")
  fi
done
# A shared object names its own dependencies; an archive does not. CMake lists the Abseil
# libraries our code and gRPC's config name, not the ones those use in turn (base,
# spinlock_wait, …): the group gets every Abseil archive, of which the linker takes what it needs.
if [[ -n "${absl_dir:-}" ]]; then
  for archive in "$absl_dir"/libabsl_*.a; do args+=("$archive"); done
fi
$grouped && args+=("-Wl,--end-group")
exec "${args[@]}"
