#!/usr/bin/env bash
# Makes the local base images the Containerfile's stages start from, when
# they are missing, out of Debian's packages alone (no image registry):
#
#   container/bases.sh debian   localhost/wasm-mcp/debian:bookworm
#       a minimal Debian bookworm (mmdebstrap, minbase, with ca-certificates),
#       where the final image's files are gathered;
#   container/bases.sh rust     localhost/wasm-mcp/rust:VERSION-bookworm
#       that Debian with a C compiler and the Rust toolchain this checkout pins
#       (rust-toolchain.toml, as rustup installed it here), to build in.
#
# Prints the image's name. Needs root (mmdebstrap), buildah and podman:
# `make image-deps` installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_IMAGE=localhost/wasm-mcp/debian:bookworm
PATH_ENV=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

exists() { podman image exists "$1"; }

debian() {
    if ! exists "$DEBIAN_IMAGE"; then
        echo "bases.sh: making $DEBIAN_IMAGE from Debian's packages" >&2
        mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm - "$MIRROR" |
            podman import --quiet --change "ENV PATH=$PATH_ENV" - "$DEBIAN_IMAGE" >/dev/null
    fi
    echo "$DEBIAN_IMAGE"
}

rust() {
    local version sysroot image
    version=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
    image=localhost/wasm-mcp/rust:$version-bookworm
    if ! exists "$image"; then
        debian >/dev/null
        sysroot=$(rustc --print sysroot)
        case $(rustc --version) in
            "rustc $version "*) ;;
            *) echo "bases.sh: rustc here is not $version (rust-toolchain.toml): run \`make toolchain\`" >&2; exit 1 ;;
        esac
        echo "bases.sh: making $image (gcc, and Rust $version from $sysroot)" >&2
        container=$(buildah from --quiet "$DEBIAN_IMAGE")
        trap 'buildah rm "$container" >/dev/null' EXIT
        buildah run --isolation chroot --network host "$container" -- sh -c \
            'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null && rm -rf /var/lib/apt/lists/*'
        buildah copy --quiet "$container" "$sysroot" /usr/local/rust >/dev/null
        buildah config --env CARGO_HOME=/usr/local/cargo --env "PATH=/usr/local/cargo/bin:/usr/local/rust/bin:$PATH_ENV" "$container"
        buildah commit --quiet --rm "$container" "$image" >/dev/null
        trap - EXIT
    fi
    echo "$image"
}

case ${1:-} in
    debian) debian ;;
    rust) rust ;;
    *) echo "usage: $0 debian|rust" >&2; exit 2 ;;
esac
