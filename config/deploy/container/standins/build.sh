#!/usr/bin/env bash
# `make compose-images`: local stand-ins for the official postgres and redis images that compose.yaml names, for
# machines that reach no image registry, built with Debian's podman from the Debian base `make image` makes
# (mmdebstrap) and Debian's own postgresql-15 and redis-server. compose.yaml takes them through POSTGRES_IMAGE and
# REDIS_IMAGE. podman's layer cache makes a second build take seconds.
set -euo pipefail
cd "$(dirname "$0")"
IMAGE_BASE="${IMAGE_BASE:-localhost/debian-bookworm-minbase:latest}"
POSTGRES_IMAGE="${POSTGRES_IMAGE:-localhost/postgres-standin:15-bookworm}"
REDIS_IMAGE="${REDIS_IMAGE:-localhost/redis-standin:7-bookworm}"
PODMAN=(podman --runtime runc)
BUILD=(build --network host --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 --format docker
       --build-arg BASE="$IMAGE_BASE")

if ! "${PODMAN[@]}" image exists "$IMAGE_BASE"; then
  echo "no base image $IMAGE_BASE: make image makes it" >&2
  exit 1
fi
echo "podman build $POSTGRES_IMAGE (Debian's postgresql-15)"
"${PODMAN[@]}" "${BUILD[@]}" --quiet -f postgres.Containerfile -t "$POSTGRES_IMAGE" . >/dev/null
echo "podman build $REDIS_IMAGE (Debian's redis-server)"
"${PODMAN[@]}" "${BUILD[@]}" --quiet -f redis.Containerfile -t "$REDIS_IMAGE" . >/dev/null
