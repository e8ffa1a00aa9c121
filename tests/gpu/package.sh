#!/usr/bin/env bash
# Copies the three binaries and the shared libraries they load (per ldd) into OUT/bin and
# OUT/lib, for a machine that cannot install Debian packages.
set -euo pipefail
out=${1:?usage: package.sh OUT_DIR}
cd "$(dirname "$0")/../.."
mkdir -p "$out/bin" "$out/lib"
for b in fleetprof fleetprof-server fleetprof-agent; do
  cp "build/bin/$b" "$out/bin/"
  ldd "build/bin/$b" | awk '/=> \// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;  # the host's own
      *) cp -Ln "$lib" "$out/lib/" 2>/dev/null || true ;;
    esac
  done
done
du -sh "$out"
