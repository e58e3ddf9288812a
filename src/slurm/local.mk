# SPDX-License-Identifier: BSD-3-Clause
# src/slurm — the Slurm SPANK plugin (included by the top Makefile.am):
# `srun --slimlink` preloads slim into the tasks, starts and stops one node
# service per node and step, and merges the node reports at the step's end
# (spank_slimlink(8)). Built when configure finds <slurm/spank.h>.
EXTRA_DIST += src/slurm/spank_slimlink.c
if HAVE_SLURM_SPANK
# "exec" in the name: installed with the programs (install-exec), so that
# install-exec-hook runs after it.
slurmpluginexecdir = $(slurm_plugindir)
slurmpluginexec_LTLIBRARIES = src/slurm/spank_slimlink.la
src_slurm_spank_slimlink_la_SOURCES = src/slurm/spank_slimlink.c
# Its defaults are the installed paths; plugstack.conf arguments override
# them (the tests point them at the build tree).
src_slurm_spank_slimlink_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DSLIM_SPANK_MODULE='"$(libdir)/ucx/libuct_slim.so"' \
	-DSLIM_SPANK_SLIMLINKD='"$(bindir)/slimlinkd"' \
	-DSLIM_SPANK_REPORT_TOOL='"$(bindir)/slimlink-report"'
# Slurm's own symbols (spank_*, slurm_error) come from the srun or
# slurmstepd that loads it: no --no-undefined, no library linked.
src_slurm_spank_slimlink_la_LDFLAGS = -module -avoid-version -shared

# Slurm loads the .so by the path in plugstack.conf; a libtool archive
# beside it in Slurm's plugin folder would only be clutter. Without it,
# libtool's uninstall cannot name the .so: removed here.
install-exec-hook: install-spank-no-la
install-spank-no-la:
	rm -f $(DESTDIR)$(slurmpluginexecdir)/spank_slimlink.la
uninstall-local: uninstall-spank
uninstall-spank:
	rm -f $(DESTDIR)$(slurmpluginexecdir)/spank_slimlink.so
endif
# Outside the conditional: automake wants .PHONY unconditional.
.PHONY: install-spank-no-la uninstall-spank
