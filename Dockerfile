# Multi-stage build of fleetprof's three binaries on Debian 12, the same way
# scripts/install-deps.sh and scripts/build.sh build them on a host.
FROM debian:bookworm AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN bash scripts/install-deps.sh --build-only
COPY . .
RUN FLEETPROF_JOBS=$(nproc) FLEETPROF_TARGETS="fleetprof fleetprof-server fleetprof-agent" \
      bash scripts/build.sh build \
 && strip build/bin/fleetprof build/bin/fleetprof-server build/bin/fleetprof-agent

FROM debian:bookworm-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      libgrpc++1.51 libprotobuf32 librocksdb7.8 libprometheus-cpp-core1.0 \
      libprometheus-cpp-pull1.0 libspdlog1.10 libfmt9 libisal2 zlib1g libzstd1 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/bin/fleetprof /src/build/bin/fleetprof-server /src/build/bin/fleetprof-agent /usr/local/bin/
# Containers listen on all interfaces; put auth/TLS in front before exposing these ports.
EXPOSE 7070 7071 7072
VOLUME /var/lib/fleetprof
ENTRYPOINT ["fleetprof-server", "--grpc_addr=0.0.0.0:7070", "--http_addr=0.0.0.0:7071", "--data_dir=/var/lib/fleetprof"]
