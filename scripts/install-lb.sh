#!/bin/sh
# Installs the load balancer of the scale test and of docs/deploy.md
# (HAProxy, from Debian's packages) when it is missing. Used by
# `cargo xtask scale`; runs apt-get as root, or through sudo when not root.
set -eu
if command -v haproxy >/dev/null 2>&1; then
    haproxy -v | head -n 1
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1; then
    as_root="sudo"
else
    echo "haproxy is missing: run this script as root, or: apt-get install -y haproxy" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy
# The scale test runs its own haproxy process with deploy/haproxy.cfg; the
# package's system service (if the machine runs one) is left as it is.
haproxy -v | head -n 1
