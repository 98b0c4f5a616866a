#!/bin/sh
# Installs the load balancer of the scale test and of docs/deploy.md
# (HAProxy, from Debian's packages) when it is missing. Used by
# `cargo xtask scale`; run as root (or through sudo).
set -eu
if command -v haproxy >/dev/null 2>&1; then
    haproxy -v | head -n 1
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "haproxy is missing: run this script as root, or: sudo apt-get install -y haproxy" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends haproxy
# The package enables a system service with its own configuration; the scale
# test runs its own process and needs none.
haproxy -v | head -n 1
