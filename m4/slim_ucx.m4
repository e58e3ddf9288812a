dnl SPDX-License-Identifier: BSD-3-Clause
# slim_ucx.m4 — UCX checks for slimlink.
#
# The `slim` transport is built against UCX's *internal* UCT headers, which
# Debian ships only in the `ucx` source package. Struct layouts depend on the
# installed build's configuration, so the sources must be the same version as
# the installed libraries and their config.h must be the installed build's
# (`ucx_info -b` prints it). Both are checked here.

# SLIM_CHECK_UCX: installed UCX libraries, headers and ucx_info; defines
# SLIM_UCX_VERSION and SLIM_UCX_BUILD_{MAJOR,MINOR,PATCH}.
AC_DEFUN([SLIM_CHECK_UCX], [
  PKG_CHECK_MODULES([UCX], [ucx ucx-uct ucx-ucs], [],
    [AC_MSG_ERROR([UCX not found by pkg-config (ucx, ucx-uct, ucx-ucs); install the Debian package 'libucx-dev'])])
  # The core library parses UCX_SLIM_* with UCX's configuration parser
  # (src/runtime/slim_config.h): its headers here, and libucs for the unit
  # tests (the library itself finds the process's libucs at run time).
  PKG_CHECK_MODULES([UCS], [ucx-ucs], [],
    [AC_MSG_ERROR([UCX's libucs not found by pkg-config (ucx-ucs); install the Debian package 'libucx-dev'])])

  AC_PATH_PROG([UCX_INFO], [ucx_info])
  AS_IF([test -z "$UCX_INFO"],
    [AC_MSG_ERROR([ucx_info not found; install the Debian package 'ucx-utils'])])

  AC_MSG_CHECKING([installed UCX version])
  slim_ucx_info_version=`"$UCX_INFO" -v 2>/dev/null | $SED -n '1s/^@%:@ *Version *//p'`
  slim_ucx_pc_version=`$PKG_CONFIG --modversion ucx 2>/dev/null`
  AS_IF([test -z "$slim_ucx_info_version"],
    [AC_MSG_RESULT([unknown])
     AC_MSG_ERROR([cannot read the version from '$UCX_INFO -v' (expected a first line '@%:@ Version X.Y.Z'); reinstall the Debian package 'ucx-utils'])])
  AS_IF([test "x$slim_ucx_info_version" != "x$slim_ucx_pc_version"],
    [AC_MSG_RESULT([inconsistent])
     AC_MSG_ERROR([ucx_info reports UCX $slim_ucx_info_version but pkg-config reports $slim_ucx_pc_version; install matching Debian packages 'libucx-dev' and 'ucx-utils' (apt-get install libucx-dev ucx-utils)])])
  SLIM_UCX_VERSION=$slim_ucx_info_version
  AC_MSG_RESULT([$SLIM_UCX_VERSION])

  SLIM_UCX_BUILD_MAJOR=`echo "$SLIM_UCX_VERSION" | cut -d. -f1`
  SLIM_UCX_BUILD_MINOR=`echo "$SLIM_UCX_VERSION" | cut -d. -f2`
  SLIM_UCX_BUILD_PATCH=`echo "$SLIM_UCX_VERSION" | cut -d. -f3`
  AS_CASE(["$SLIM_UCX_BUILD_MAJOR.$SLIM_UCX_BUILD_MINOR.$SLIM_UCX_BUILD_PATCH"],
    [*[[!0-9.]]*|*..*|.*|*.], [AC_MSG_ERROR([cannot parse UCX version '$SLIM_UCX_VERSION' as MAJOR.MINOR.PATCH])])
  AC_SUBST([SLIM_UCX_VERSION])
  AC_SUBST([SLIM_UCX_BUILD_MAJOR])
  AC_SUBST([SLIM_UCX_BUILD_MINOR])
  AC_SUBST([SLIM_UCX_BUILD_PATCH])
  AC_DEFINE_UNQUOTED([SLIM_UCX_BUILD_MAJOR], [$SLIM_UCX_BUILD_MAJOR], [UCX major version slimlink was built against])
  AC_DEFINE_UNQUOTED([SLIM_UCX_BUILD_MINOR], [$SLIM_UCX_BUILD_MINOR], [UCX minor version slimlink was built against])
  AC_DEFINE_UNQUOTED([SLIM_UCX_BUILD_PATCH], [$SLIM_UCX_BUILD_PATCH], [UCX patch version slimlink was built against])
  AC_DEFINE_UNQUOTED([SLIM_UCX_BUILD_VERSION], ["$SLIM_UCX_VERSION"], [UCX version slimlink was built against])

  slim_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $UCX_CFLAGS"
  AC_CHECK_HEADER([uct/api/uct.h], [],
    [AC_MSG_ERROR([uct/api/uct.h not found; install the Debian package 'libucx-dev'])])
  CPPFLAGS=$slim_save_CPPFLAGS
])

# SLIM_CHECK_UCX_SRC: --with-ucx-src=DIR; the version in DIR must equal the
# installed version. Generates <builddir>/ucx-config/config.h and substitutes
# UCX_SRC_DIR and UCX_INTERNAL_CPPFLAGS (absolute paths).
AC_DEFUN([SLIM_CHECK_UCX_SRC], [
  AC_REQUIRE([SLIM_CHECK_UCX])
  slim_deb_version=
  AS_IF([command -v dpkg-query >/dev/null 2>&1],
    [slim_deb_version=`dpkg-query -W -f='${Version}' libucx-dev 2>/dev/null`])
  AS_IF([test -n "$slim_deb_version"],
    [slim_ucx_fix="run scripts/install-deps (it fetches Debian's ucx source package matching the installed UCX), or 'apt-get source ucx=$slim_deb_version' and pass --with-ucx-src=<dir>/ucx-$SLIM_UCX_VERSION"],
    [slim_ucx_fix="run scripts/install-deps, or unpack the UCX $SLIM_UCX_VERSION sources and pass --with-ucx-src=DIR"])

  AC_ARG_WITH([ucx-src],
    [AS_HELP_STRING([--with-ucx-src=DIR],
      [UCX source tree of exactly the installed UCX version, for UCT's internal headers (default: SRCDIR/.deps/ucx-VERSION, as fetched by scripts/install-deps)])],
    [], [with_ucx_src="$srcdir/.deps/ucx-$SLIM_UCX_VERSION"])
  AS_CASE(["$with_ucx_src"],
    [yes|no|""], [AC_MSG_ERROR([--with-ucx-src needs a directory: the 'slim' transport cannot be built without UCX's internal headers; $slim_ucx_fix])])

  AC_MSG_CHECKING([for UCX internal headers])
  AS_IF([test -f "$with_ucx_src/src/uct/base/uct_iface.h"],
    [UCX_SRC_DIR=`cd "$with_ucx_src" && pwd`
     AC_MSG_RESULT([$UCX_SRC_DIR])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([UCX sources not found: '$with_ucx_src/src/uct/base/uct_iface.h' does not exist; $slim_ucx_fix])])

  AC_MSG_CHECKING([UCX source version])
  slim_ucx_src_version=
  # UCX's configure.ac has lines 'define([ucx_ver_major], 1)'. The regexps say
  # "de.ine" because m4 would expand the word itself.
  AS_IF([test -f "$UCX_SRC_DIR/configure.ac"], [
    slim_v_major=`$SED -n 's/^de.ine(.ucx_ver_major., *\([[0-9]]*\)).*/\1/p' "$UCX_SRC_DIR/configure.ac"`
    slim_v_minor=`$SED -n 's/^de.ine(.ucx_ver_minor., *\([[0-9]]*\)).*/\1/p' "$UCX_SRC_DIR/configure.ac"`
    slim_v_patch=`$SED -n 's/^de.ine(.ucx_ver_patch., *\([[0-9]]*\)).*/\1/p' "$UCX_SRC_DIR/configure.ac"`
    AS_IF([test -n "$slim_v_major" && test -n "$slim_v_minor" && test -n "$slim_v_patch"],
      [slim_ucx_src_version="$slim_v_major.$slim_v_minor.$slim_v_patch"])
  ])
  AS_IF([test -z "$slim_ucx_src_version"],
    [AC_MSG_RESULT([unknown])
     AC_MSG_ERROR([cannot read the UCX version from '$UCX_SRC_DIR/configure.ac' (ucx_ver_major/minor/patch); $slim_ucx_fix])])
  AC_MSG_RESULT([$slim_ucx_src_version])
  AS_IF([test "x$slim_ucx_src_version" != "x$SLIM_UCX_VERSION"],
    [AC_MSG_ERROR([UCX version mismatch: the sources in '$UCX_SRC_DIR' are UCX $slim_ucx_src_version but the installed UCX is $SLIM_UCX_VERSION (ucx_info -v, pkg-config ucx); the 'slim' transport must be built against the installed version's headers. To fix: $slim_ucx_fix])])

  # UCX's internal headers expect the config.h of the build they belong to;
  # the installed build prints its own (ucx_info -b), so no UCX configure runs.
  AC_MSG_CHECKING([for the installed UCX build configuration])
  slim_abs_builddir=`pwd`
  AS_MKDIR_P([ucx-config])
  {
    echo "/* Generated by slimlink's configure from '$UCX_INFO -b' (UCX $SLIM_UCX_VERSION). Do not edit. */"
    "$UCX_INFO" -b 2>/dev/null | $GREP '^@%:@'
  } > ucx-config/config.h.tmp
  AS_IF([$GREP -q '^@%:@define *UCX_MODULE_SUBDIR' ucx-config/config.h.tmp],
    [mv -f ucx-config/config.h.tmp ucx-config/config.h
     AC_MSG_RESULT([ucx-config/config.h])],
    [rm -f ucx-config/config.h.tmp
     AC_MSG_RESULT([no])
     AC_MSG_ERROR(['$UCX_INFO -b' did not print a UCX build configuration (config.h); reinstall the Debian package 'ucx-utils'])])

  UCX_INTERNAL_CPPFLAGS="-I$slim_abs_builddir/ucx-config -I$UCX_SRC_DIR/src"
  AC_SUBST([UCX_SRC_DIR])
  AC_SUBST([UCX_INTERNAL_CPPFLAGS])

  AC_MSG_CHECKING([whether UCX internal headers compile])
  slim_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $UCX_INTERNAL_CPPFLAGS $UCX_CFLAGS"
  AC_LANG_PUSH([C])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include "config.h"
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
]], [[return UCS_OK;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([UCX's internal headers in '$UCX_SRC_DIR/src' do not compile with the installed build's config.h; see config.log. $slim_ucx_fix])])
  AC_LANG_POP([C])
  CPPFLAGS=$slim_save_CPPFLAGS
])
