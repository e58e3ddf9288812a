# SPDX-License-Identifier: BSD-3-Clause
# doc/man — manual pages (included by the top Makefile.am). The sources are
# Markdown (doc/man/*.md); pandoc turns them into roff at build time.
#
# The roff is shipped in the release tarball (dist_man_MANS), so building a
# release needs no pandoc: there the pages are newer than their sources and
# make never rebuilds them (configure says so when pandoc is missing). A git
# checkout has only the Markdown, so configure requires pandoc there. The
# generated roff is never committed.
dist_man_MANS = \
	doc/man/slimlink.7 \
	doc/man/slimlink-run.1 \
	doc/man/slimlinkd.1 \
	doc/man/slim-replay.1 \
	doc/man/slim-plot.1 \
	doc/man/spank_slimlink.8 \
	doc/man/slimlink-report.1
EXTRA_DIST += \
	doc/man/slimlink.7.md \
	doc/man/slimlink-run.1.md \
	doc/man/slimlinkd.1.md \
	doc/man/slim-replay.1.md \
	doc/man/slim-plot.1.md \
	doc/man/spank_slimlink.8.md \
	doc/man/slimlink-report.1.md
# Shipped in the tarball: only maintainer-clean removes them.
MAINTAINERCLEANFILES += $(dist_man_MANS)

# The title block names page and section; the footer carries the version,
# hence configure.ac (AC_INIT) among the prerequisites, beside this file.
# -smart keeps ASCII quotes and "--" as typed, and no hyphenation keeps
# names such as UCX_SLIM_LINK_EXEC whole: names must survive copy and paste.
man_pandoc = $(PANDOC) --standalone --from markdown-smart --to man \
	--metadata hyphenate=false --variable footer='slimlink $(PACKAGE_VERSION)'
man_deps = $(top_srcdir)/configure.ac $(srcdir)/doc/man/local.mk
man_generate = \
	if test -z '$(PANDOC)'; then \
	  echo "error: pandoc is needed to build $@ from $$src; install the Debian package 'pandoc' and re-run configure" >&2; \
	  exit 1; \
	fi; \
	$(MKDIR_P) doc/man && \
	rm -f $@ $@.tmp && \
	$(man_pandoc) -o $@.tmp "$$src" && \
	mv -f $@.tmp $@

doc/man/slimlink.7: $(srcdir)/doc/man/slimlink.7.md $(man_deps)
	$(AM_V_GEN)src=$(srcdir)/doc/man/slimlink.7.md; $(man_generate)
doc/man/slimlink-run.1: $(srcdir)/doc/man/slimlink-run.1.md $(man_deps)
	$(AM_V_GEN)src=$(srcdir)/doc/man/slimlink-run.1.md; $(man_generate)
doc/man/slimlinkd.1: $(srcdir)/doc/man/slimlinkd.1.md $(man_deps)
	$(AM_V_GEN)src=$(srcdir)/doc/man/slimlinkd.1.md; $(man_generate)
doc/man/slim-replay.1: $(srcdir)/doc/man/slim-replay.1.md $(man_deps)
	$(AM_V_GEN)src=$(srcdir)/doc/man/slim-replay.1.md; $(man_generate)
doc/man/slim-plot.1: $(srcdir)/doc/man/slim-plot.1.md $(man_deps)
	$(AM_V_GEN)src=$(srcdir)/doc/man/slim-plot.1.md; $(man_generate)
doc/man/spank_slimlink.8: $(srcdir)/doc/man/spank_slimlink.8.md $(man_deps)
	$(AM_V_GEN)src=$(srcdir)/doc/man/spank_slimlink.8.md; $(man_generate)

doc/man/slimlink-report.1: $(srcdir)/doc/man/slimlink-report.1.md $(man_deps)
	$(AM_V_GEN)src=$(srcdir)/doc/man/slimlink-report.1.md; $(man_generate)

# Each page renders without warnings, slimlink(7) documents every
# UCX_SLIM_* variable of the code (with its default) and every report field,
# slimlink-report(1) every field of the job record, and README.md does not repeat them as a table.
TESTS += tests/man/man-pages.test
EXTRA_DIST += tests/man/man-pages.test
