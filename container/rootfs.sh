#!/bin/sh
# Gathers the final image's root filesystem under ROOT (its first argument),
# around ROOT/usr/local/bin/wasm-mcp: the shared libraries the binary loads
# (as ldd finds them on this Debian), the CA certificates for registries,
# plugins' HTTPS and OAuth issuers, name lookup settings, a non-root user
# (10001) and the directories the image's settings name.
set -eu
root=$1
binary=$root/usr/local/bin/wasm-mcp

# The libraries: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)", and the
# loader on a line of its own ("/lib64/ld-linux-x86-64.so.2 (0x…)").
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u |
    while read -r lib; do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done

mkdir -p "$root/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
printf 'root:x:0:0:root:/root:/sbin/nologin\nwasm-mcp:x:10001:10001:wasm-mcp:/var/lib/wasm-mcp:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nwasm-mcp:x:10001:\n' >"$root/etc/group"

# The plugins directory (empty: mount one), and the two writable volumes.
mkdir -p "$root/etc/wasm-mcp/plugins" "$root/var/cache/wasm-mcp" "$root/var/lib/wasm-mcp"
chown 10001:10001 "$root/var/cache/wasm-mcp" "$root/var/lib/wasm-mcp"
chmod 0700 "$root/var/cache/wasm-mcp" "$root/var/lib/wasm-mcp"
