#!/bin/sh
# Regenerates configure and Makefile.in (needs autoconf, automake, libtool,
# pkg-config: scripts/install-deps installs them).
set -e
cd "$(dirname "$0")"
exec autoreconf -fi "$@"
