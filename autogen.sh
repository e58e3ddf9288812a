#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Regenerates configure and Makefile.in (needs autoconf, automake, libtool,
# pkg-config: scripts/install-deps installs them).
set -e
cd "$(dirname "$0")"
exec autoreconf -fi "$@"
