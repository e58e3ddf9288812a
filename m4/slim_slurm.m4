dnl SPDX-License-Identifier: BSD-3-Clause
# SLIM_CHECK_SLURM: the SPANK plugin spank_slimlink.so (src/slurm/), built
# when <slurm/spank.h> is found (Debian package libslurm-dev). The plugin is
# only loaded by Slurm, never linked: no library is checked.
#
#   --with-slurm-plugindir=DIR  where it is installed (default LIBDIR/slurm;
#                               Debian's Slurm keeps its own plugins in
#                               LIBDIR/slurm-wlm; plugstack.conf names the
#                               plugin by its full path either way)
#   --without-slurm             do not build it
#   --with-slurm                fail when the header is missing
AC_DEFUN([SLIM_CHECK_SLURM], [
AC_ARG_WITH([slurm],
  [AS_HELP_STRING([--with-slurm], [build the Slurm SPANK plugin spank_slimlink.so (default: when <slurm/spank.h> is found)])],
  [], [with_slurm=check])
AC_ARG_WITH([slurm-plugindir],
  [AS_HELP_STRING([--with-slurm-plugindir=DIR], [install spank_slimlink.so into DIR (default: LIBDIR/slurm)])],
  [slurm_plugindir=$withval], [slurm_plugindir='${libdir}/slurm'])
have_slurm_spank=no
AS_IF([test "x$with_slurm" != xno], [
  AC_CHECK_HEADERS([slurm/spank.h slurm/slurm.h], [have_slurm_spank=yes], [have_slurm_spank=no; break])
])
AS_IF([test "x$with_slurm" = xyes && test "x$have_slurm_spank" != xyes],
  [AC_MSG_ERROR([--with-slurm: <slurm/spank.h> not found; install the Debian package 'libslurm-dev'])])
AS_IF([test "x$with_slurm" = xcheck && test "x$have_slurm_spank" != xyes],
  [AC_MSG_WARN([<slurm/spank.h> not found: the Slurm SPANK plugin (srun --slimlink) is not built; install the Debian package 'libslurm-dev' to build it])])
AC_SUBST([slurm_plugindir])
AM_CONDITIONAL([HAVE_SLURM_SPANK], [test "x$have_slurm_spank" = xyes])
])
