# fleetprof's runtime image: the three binaries of a host build (build/bin, Debian 12) and the
# shared libraries they load, nothing else (no shell, no package manager). No registry is
# needed: scripts/build-image.sh lays out the root filesystem from the host (the binaries,
# stripped of debug info, and their `ldd` closure) and builds this file FROM scratch with
# podman/buildah, the context being that layout:
#   scripts/build-image.sh build/bin fleetprof:dev
# Compiling inside the image is not needed: the host's Debian 12 build is the one the tests ran.
FROM scratch
COPY rootfs/ /
COPY --chown=10001:10001 data/ /var/lib/fleetprof/
ENV PATH=/usr/local/bin:/usr/bin \
    LANG=C.UTF-8
# The server runs as this non-root user (uid 10001, group 10001) with its data in the volume.
# The agent needs root with three capabilities and the host's PIDs
# (deploy/kubernetes/base/agent-daemonset.yaml says which and why; tests/image runs it so):
#   --user 0 --cap-drop=all --cap-add=DAC_READ_SEARCH,SYS_PTRACE,SYS_ADMIN --pid=host
#   --entrypoint /usr/local/bin/fleetprof-agent
# and its state (--state_dir) on a volume of its own.
USER 10001:10001
WORKDIR /var/lib/fleetprof
VOLUME /var/lib/fleetprof
# gRPC (ingest, queries, agents), HTTP (web app, /api/v1, /metrics, /healthz), agent metrics.
EXPOSE 7070 7071 7072
ENTRYPOINT ["/usr/local/bin/fleetprof-server", "--data_dir=/var/lib/fleetprof"]
