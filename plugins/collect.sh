#!/usr/bin/env bash
# Copies built plugin components into a plugins directory the host serves.
#
#   collect.sh SRC_DIR CRATES_DIR DEST_DIR
#
# For every crate folder CRATES_DIR/<folder> (one with a Cargo.toml), copies
# SRC_DIR/<crate_name_with_underscores>.wasm to DEST_DIR/<folder>.wasm, and
# CRATES_DIR/<folder>/<folder>.toml (the plugin's manifest, if it has one) to
# DEST_DIR/<folder>.toml, the folder of files it grants,
# CRATES_DIR/<folder>/<folder>/ (if it has one), to DEST_DIR/<folder>/: a
# manifest granting the relative path <folder> works in both places, and the
# skills it ships, CRATES_DIR/<folder>/skills/ (if it has them), to
# DEST_DIR/<folder>.skills/; a copy of DEST_DIR takes everything its plugins
# need. A crate whose component was not built is an error.
set -euo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: $0 SRC_DIR CRATES_DIR DEST_DIR" >&2
    exit 2
fi
src=$1 crates=$2 dest=$3
mkdir -p "$dest"

count=0
for manifest in "$crates"/*/Cargo.toml; do
    [[ -e $manifest ]] || continue
    dir=$(dirname "$manifest")
    folder=$(basename "$dir")
    # The package name: the first `name = "..."` line of the manifest.
    name=$(sed -n 's/^name[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$manifest" | head -n 1)
    wasm="$src/${name//-/_}.wasm"
    if [[ ! -f $wasm ]]; then
        echo "collect.sh: $wasm not found (was $folder built for wasm32-wasip2?)" >&2
        exit 1
    fi
    cp "$wasm" "$dest/$folder.wasm"
    if [[ -f $dir/$folder.toml ]]; then
        cp "$dir/$folder.toml" "$dest/$folder.toml"
    fi
    if [[ -d $dir/$folder ]]; then
        rm -rf "${dest:?}/$folder"
        cp -R "$dir/$folder" "$dest/$folder"
    fi
    if [[ -d $dir/skills ]]; then
        rm -rf "${dest:?}/$folder.skills"
        cp -R "$dir/skills" "$dest/$folder.skills"
    fi
    count=$((count + 1))
done
echo "collect.sh: $count plugin(s) from $crates into $dest"
