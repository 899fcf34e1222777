# syntax=docker/dockerfile:1
# The spotshift operator image: a Debian 12 build stage, then a slim runtime stage with only the
# binary and the shared libraries it links (fmt, yaml-cpp, OpenSSL, libstdc++), running as a
# non-root user. Build it from the repository root:
#
#   docker build -t ghcr.io/spotshift/spotshift:0.1.0 .
#
# The chart runs it as `spotshift run ...` with a read-only root filesystem: the binary writes
# nothing to disk.

FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      g++ meson ninja-build pkg-config git ca-certificates \
      libboost1.81-dev rapidjson-dev libyaml-cpp-dev libfmt-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Only the operator: the tests, kubesim and benchmarks are not built.
RUN meson setup /build --buildtype=release -Db_ndebug=true -Dtests=disabled \
 && ninja -C /build operator/spotshift \
 && strip /build/operator/spotshift \
 && /build/operator/spotshift version

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libfmt9 libyaml-cpp0.7 libssl3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 spotshift \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin spotshift
COPY --from=build /build/operator/spotshift /usr/local/bin/spotshift
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/spotshift"]
CMD ["run"]
