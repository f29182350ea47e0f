#!/usr/bin/env bash
# `make image`: the image of Containerfile, built with Debian's podman from what this machine has.
#   1. the base: Debian bookworm made locally with mmdebstrap (no image registry needed), imported once;
#   2. the wheelhouse: the project's dependencies as wheels, pinned to the versions of .venv (the ones the
#      tests ran with), built on the host (`pip wheel`), installed in the image with `pip install --no-index`;
#   3. the source: the files git knows (committed or not), nothing ignored;
#   4. `podman build`, with runc, host networking and the limits these machines allow, in Docker's image
#      format (the OCI format has no HEALTHCHECK).
set -euo pipefail
cd "$(dirname "$0")/../../.."
IMAGE="${IMAGE:-localhost/partner-service:latest}"
IMAGE_BASE="${IMAGE_BASE:-localhost/debian-bookworm-minbase:latest}"
PODMAN=(podman --runtime runc)
CONTEXT=build/image
PIP=.venv/bin/pip

rm -rf "$CONTEXT/wheelhouse" "$CONTEXT/src"
mkdir -p "$CONTEXT/wheelhouse" "$CONTEXT/src"

if ! "${PODMAN[@]}" image exists "$IMAGE_BASE"; then
  echo "base: mmdebstrap --variant=minbase bookworm"
  mmdebstrap --variant=minbase --quiet bookworm "$CONTEXT/base.tar"
  "${PODMAN[@]}" import "$CONTEXT/base.tar" "$IMAGE_BASE"
  rm -f "$CONTEXT/base.tar"
fi

echo "wheelhouse: the runtime dependencies, pinned to .venv's versions"
.venv/bin/python - "$CONTEXT/wheelhouse/requirements.txt" <<'PY'
import sys, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
open(sys.argv[1], "w").write("\n".join(deps) + "\n")
PY
"$PIP" freeze --exclude-editable | grep -iv '^partner-service' > "$CONTEXT/wheelhouse/constraints.txt"
echo "-c constraints.txt" >> "$CONTEXT/wheelhouse/requirements.txt"
"$PIP" wheel --quiet --wheel-dir "$CONTEXT/wheelhouse" --requirement "$CONTEXT/wheelhouse/requirements.txt"
# The image's Python is Debian's 3.11.2: redis asks there for async-timeout, which .venv's newer 3.11 does not.
"$PIP" wheel --quiet --wheel-dir "$CONTEXT/wheelhouse" 'async-timeout>=4.0.3,<6'

echo "source: the files git knows"
git ls-files -z --cached --others --exclude-standard | grep -zv '^tests/\|^bench/' \
  | xargs -0 cp --parents -t "$CONTEXT/src"

echo "podman build $IMAGE (base $IMAGE_BASE)"
"${PODMAN[@]}" build --network host --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
  --format docker --build-arg BASE="$IMAGE_BASE" -f config/deploy/container/Containerfile -t "$IMAGE" "$CONTEXT"
