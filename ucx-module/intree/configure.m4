dnl SPDX-License-Identifier: BSD-3-Clause
#
# slimlink's `slim` transport built inside a UCX source tree, as src/uct/slim
# (copied there with the module's sources by ucx-module/intree/add-to-ucx).
# Built only when --with-slimlink=PREFIX names an installed libslimlink: the
# module forwards every operation to that library's core.
#
slim_happy=no
AC_ARG_WITH([slimlink],
            [AS_HELP_STRING([--with-slimlink=PREFIX],
                            [Build the slim transport (slimlink) against the
                             libslimlink installed in PREFIX])],
            [], [with_slimlink=no])

AS_IF([test "x$with_slimlink" != xno],
      [AS_IF([test -f "$with_slimlink/include/slimlink.h" && \
              test -e "$with_slimlink/lib/libslimlink.so"],
             [slim_happy=yes
              SLIMLINK_CPPFLAGS="-I$with_slimlink/include"
              SLIMLINK_LIBS="-L$with_slimlink/lib -R$with_slimlink/lib -lslimlink"
              uct_modules="${uct_modules}:slim"],
             [AC_MSG_ERROR([--with-slimlink=$with_slimlink: expected include/slimlink.h and lib/libslimlink.so there; install slimlink into that prefix first])])])

AC_SUBST([SLIMLINK_CPPFLAGS])
AC_SUBST([SLIMLINK_LIBS])
AM_CONDITIONAL([HAVE_SLIM], [test "x$slim_happy" = xyes])
AC_CONFIG_FILES([src/uct/slim/Makefile])
