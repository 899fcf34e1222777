# syntax=docker/dockerfile:1
# The spotshift operator image, the same one scripts/build-image.sh makes as an OCI archive without
# a container engine: a Debian 12 stage builds the operator (release, no tests) and lays out a
# root filesystem with only the binary, the shared libraries it links and their loader, the CA
# bundle, the tz database and a non-root user (scripts/build-image.sh --rootfs-only); the image is that filesystem
# on scratch. From the repository root:
#
#   docker build -t ghcr.io/spotshift/spotshift:0.1.0 .
#
# The chart runs it as `spotshift run ...` with a read-only root filesystem as user 65532.

FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      g++ meson ninja-build pkg-config git ca-certificates binutils tzdata \
      libboost1.81-dev rapidjson-dev libyaml-cpp-dev libfmt-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN scripts/build-image.sh --rootfs-only /rootfs \
 && chroot /rootfs /usr/local/bin/spotshift version

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/spotshift"]
CMD ["run"]
