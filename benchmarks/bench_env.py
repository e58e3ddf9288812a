# SPDX-License-Identifier: BSD-3-Clause
"""What the benchmark scripts share: finding slimlink-run, and pointing a build
tree's launcher at that tree's module, library and node service."""

import os
import shutil

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def first_executable(candidates):
    """The first of `candidates` (None entries allowed) that is an executable
    file; None when there is none."""
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def find_launcher(builddir):
    """SLIMLINK_RUN, else slimlink-run in the build tree, the source tree's
    build/ or install/, or PATH; None when there is none."""
    if os.environ.get("SLIMLINK_RUN"):
        return os.environ["SLIMLINK_RUN"]
    return first_executable([
        os.path.join(builddir, "slimlink-run"),
        os.path.join(TOP, "slimlink-run"),
        os.path.join(TOP, "build", "slimlink-run"),
        os.path.join(TOP, "install", "bin", "slimlink-run"),
        shutil.which("slimlink-run"),
    ])


def build_env(launcher):
    """A build tree's slimlink-run needs the uninstalled module and library,
    as `make check` sets them (AM_TESTS_ENVIRONMENT in Makefile.am), and the
    tree's slimlinkd: it would otherwise start the installed one, which may
    be older than the tree. Variables already set win."""
    top = os.path.dirname(os.path.abspath(launcher.split()[0]))
    module = os.path.join(top, "ucx-module", ".libs", "libuct_slim.so")
    if "SLIMLINK_MODULE_PATH" not in os.environ and os.path.isfile(module):
        os.environ["SLIMLINK_MODULE_PATH"] = module
        libs = os.path.join(top, "src", ".libs")
        old = os.environ.get("LD_LIBRARY_PATH")
        os.environ["LD_LIBRARY_PATH"] = libs + (":" + old if old else "")
    daemon = os.path.join(top, "src", "tools", "slimlinkd")
    if "SLIMLINKD" not in os.environ and os.path.isfile(daemon):
        os.environ["SLIMLINKD"] = daemon
