# SPDX-License-Identifier: BSD-3-Clause
"""Spack recipe for slimlink.

Copy this folder into a Spack repository (spack repo create; cp -r
contrib/spack/slimlink <repo>/packages/) and build a checkout of slimlink:

    spack develop --path /path/to/slimlink slimlink@main
    spack install slimlink@main +ethtool

There is no release tarball to fetch yet, so `main` is a git version and
builds with autotools and pandoc (the manual pages).

A native UCX module is not a variant: a UCX loads only the transports in the
module list it was compiled with (uct_MODULES, ":ib:rdmacm:cma" in Debian's
and Spack's builds), never every file in its module folder, so no install
location makes a stock UCX load `slim`. slimlink-run preloads the module
instead; scripts/build-ucx in the tree builds a UCX with slim in its list.
"""

from spack.package import *


class Slimlink(AutotoolsPackage):
    """Energy-proportional MPI links: a UCX transport ("slim") below MPI
    that forwards to a real transport, packs marked float64 buffers lossily,
    predicts idle periods and lowers the link's width (InfiniBand) or lets it
    idle (Ethernet EEE), with a node service and energy reports."""

    # The site's clone of the repository: there is no public one yet.
    git = "https://localhost/slimlink.git"

    license("BSD-3-Clause")

    version("main", branch="main")

    variant("ibmad", default=False, description="The ibmad link backend of slimlinkd (InfiniBand width through libibmad)")
    variant("ethtool", default=True, description="The ethtool link backend of slimlinkd (Ethernet EEE through netlink)")
    variant("systemd", default=False, description="Install the slimlinkd@.service unit into <prefix>/lib/systemd/system")

    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("pandoc", type="build")
    depends_on("catch2@2", type="build")
    depends_on("nlohmann-json@3.11:", type="build")
    depends_on("cli11@2.1:", type="build")

    # The transport is built against UCT's internal headers of exactly the
    # UCX it loads into, so each UCX version needs its sources (below).
    depends_on("ucx@1.13.1")
    depends_on("spdlog")
    depends_on("otf2@3:")
    depends_on("mpich")
    depends_on("rdma-core", when="+ibmad")
    depends_on("libmnl", when="+ethtool")
    depends_on("python", type="run")
    depends_on("py-matplotlib", type="run")

    # The UCX sources configure checks against the installed UCX: Debian's
    # upstream tarball of 1.13.1 (its checksum is the one Debian's signed
    # ucx_1.13.1-1.dsc gives). Add a resource per supported UCX version.
    resource(
        name="ucx-src",
        url="https://deb.debian.org/debian/pool/main/u/ucx/ucx_1.13.1.orig.tar.xz",
        sha256="1a88e09ca1b406c046a469c2ae271d2c330050b5664c0bcd9890e26c6ef09f3c",
        destination="ucx-src",
        when="^ucx@1.13.1",
    )

    def autoreconf(self, spec, prefix):
        Executable("./autogen.sh")()

    def ucx_src(self):
        return join_path(self.stage.source_path, "ucx-src", "ucx-" + str(self.spec["ucx"].version))

    def setup_build_environment(self, env):
        env.set("MPICC", self.spec["mpich"].mpicc)
        env.set("MPIEXEC", join_path(self.spec["mpich"].prefix.bin, "mpiexec"))

    def configure_args(self):
        args = ["--with-ucx-src=" + self.ucx_src(), "--without-openmpi"]
        args += self.with_or_without("ibmad")
        args.append("--with-libmnl" if self.spec.satisfies("+ethtool") else "--without-libmnl")
        if self.spec.satisfies("+systemd"):
            args.append("--with-systemdsystemunitdir=" + join_path(self.prefix.lib, "systemd", "system"))
        return args
