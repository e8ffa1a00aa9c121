#!/usr/bin/env bash
# Builds fleetprof's container image from the binaries of a host build (no registry, no
# compiler in the image): lays out a root filesystem with the three binaries (debug info
# stripped) and the shared libraries `ldd` says they load, then builds ./Dockerfile on it with
# podman (Debian's podman/buildah; scripts/install-deps.sh installs them).
#   scripts/build-image.sh [BIN_DIR] [TAG]      (defaults: build/bin fleetprof:dev)
# Prints the image's size on its last line. FLEETPROF_PODMAN_FLAGS adds global podman flags
# (e.g. --root DIR to keep the image out of the default store).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin_dir=$(cd "${1:-$here/build/bin}" && pwd)
tag=${2:-fleetprof:dev}
read -r -a podman_flags <<< "${FLEETPROF_PODMAN_FLAGS:-}"
binaries=(fleetprof fleetprof-server fleetprof-agent)
# curl: the exec probe of a server that requires client certificates (mTLS), which a kubelet's
# HTTP probe cannot present (its libraries are already in the binaries' closure). chmod: the
# agent's init container opens the shared Kineto socket folder to every job user (1777).
extras=(/usr/bin/curl /usr/bin/chmod)

for tool in podman ldd strip ldconfig; do
  command -v "$tool" > /dev/null || { echo "build-image: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done
ctx=$(mktemp -d /tmp/fleetprof-image.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root"/usr/local/bin "$root"/usr/bin "$root"/usr/lib/x86_64-linux-gnu "$root"/usr/lib64 \
         "$root"/etc/ssl/certs "$root"/tmp
# Debian 12 is merged-/usr: /lib and /lib64 are links into /usr, as ldd's paths expect.
ln -s usr/lib "$root"/lib
ln -s usr/lib64 "$root"/lib64
chmod 1777 "$root"/tmp

for b in "${binaries[@]}"; do
  [[ -x "$bin_dir/$b" ]] || { echo "build-image: $bin_dir/$b missing" >&2; exit 1; }
  strip --strip-debug -o "$root/usr/local/bin/$b" "$bin_dir/$b"
done
cp -L "${extras[@]}" "$root"/usr/bin/
# Every library the binaries load, at the path ldd names (the file behind its links).
for f in "${binaries[@]/#/$bin_dir/}" "${extras[@]}"; do ldd "$f"; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u |
  while read -r lib; do
    dest=$root$(dirname "$lib" | sed 's#^/lib#/usr/lib#')
    mkdir -p "$dest"
    cp -L "$lib" "$dest/"
  done
# The loader's search path as Debian has it (the NVIDIA container runtime adds NVML to
# /usr/lib/x86_64-linux-gnu and runs ldconfig on this tree).
cp -a /etc/ld.so.conf /etc/ld.so.conf.d "$root"/etc/
ldconfig -r "$root"
cp -L /etc/ssl/certs/ca-certificates.crt "$root"/etc/ssl/certs/
cat > "$root"/etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/usr/sbin/nologin
fleetprof:x:10001:10001:fleetprof:/var/lib/fleetprof:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PASSWD
printf 'root:x:0:\nfleetprof:x:10001:\nnogroup:x:65534:\n' > "$root"/etc/group
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$root"/etc/nsswitch.conf
# The server's data folder, owned by its user (COPY --chown in the Dockerfile: COPY makes
# everything else root's).
mkdir -p "$ctx"/data
cp "$here/Dockerfile" "$ctx/Dockerfile"

podman --cgroup-manager=cgroupfs "${podman_flags[@]}" build --quiet --network=none -f "$ctx/Dockerfile" -t "$tag" "$ctx" > /dev/null
size=$(podman "${podman_flags[@]}" image inspect --format '{{.Size}}' "$tag")
echo "build-image: $tag $((size / 1024 / 1024)) MiB ($size bytes)"
