dnl SPDX-License-Identifier: BSD-3-Clause
# slim_mpi.m4 — MPI implementations for slimlink's MPI programs and tests.
#
# MPI programs are ordinary automake programs compiled with $(CC) and
# MPICH_CFLAGS / MPICH_LIBS (or OMPI_CFLAGS / OMPI_LIBS), derived from the
# implementation's pkg-config file or, failing that, its compiler wrapper.

# SLIM_MPI_WRAPPER_FLAGS(WRAPPER, COMPILE-ARGS, LINK-ARGS, CFLAGS-VAR, LIBS-VAR)
# Splits a wrapper's "show" output into preprocessor/compiler flags and
# linker flags (the compiler name itself and -c/-o are dropped).
AC_DEFUN([SLIM_MPI_WRAPPER_FLAGS], [
  slim_cf=
  slim_lf=
  for slim_w in `$1 $2 2>/dev/null`; do
    AS_CASE(["$slim_w"],
      [-I*|-D*|-pthread|-std=*], [slim_cf="$slim_cf $slim_w"])
  done
  for slim_w in `$1 $3 2>/dev/null`; do
    AS_CASE(["$slim_w"],
      [-L*|-l*|-Wl,*|-pthread], [slim_lf="$slim_lf $slim_w"])
  done
  $4=`echo $slim_cf`
  $5=`echo $slim_lf`
])

AC_DEFUN([SLIM_CHECK_MPICH], [
  AC_ARG_VAR([MPICC], [MPICH compiler wrapper (default: mpicc.mpich)])
  AC_ARG_VAR([MPIEXEC], [MPICH launcher (default: mpiexec.mpich)])
  AC_PATH_PROG([MPICC], [mpicc.mpich])
  AC_PATH_PROG([MPIEXEC], [mpiexec.mpich])
  AS_IF([test -z "$MPICC"],
    [AC_MSG_ERROR([mpicc.mpich not found; install the Debian packages 'mpich libmpich-dev'])])
  AS_IF([test -z "$MPIEXEC"],
    [AC_MSG_ERROR([mpiexec.mpich not found; install the Debian packages 'mpich libmpich-dev'])])

  AC_MSG_CHECKING([MPICH compile and link flags])
  AS_IF([test -z "$MPICH_CFLAGS$MPICH_LIBS" && $PKG_CONFIG --exists mpich 2>/dev/null],
    [MPICH_CFLAGS=`$PKG_CONFIG --cflags mpich`
     MPICH_LIBS=`$PKG_CONFIG --libs mpich`
     AC_MSG_RESULT([from pkg-config mpich])],
    [test -z "$MPICH_CFLAGS$MPICH_LIBS"],
    [SLIM_MPI_WRAPPER_FLAGS([$MPICC], [-show -c], [-show], [MPICH_CFLAGS], [MPICH_LIBS])
     AC_MSG_RESULT([from $MPICC -show])],
    [AC_MSG_RESULT([from the environment])])
  AC_ARG_VAR([MPICH_CFLAGS], [compiler flags for MPICH programs])
  AC_ARG_VAR([MPICH_LIBS], [linker flags for MPICH programs])

  AC_MSG_CHECKING([whether MPICH programs link])
  slim_save_CFLAGS=$CFLAGS
  slim_save_LIBS=$LIBS
  CFLAGS="$CFLAGS $MPICH_CFLAGS"
  LIBS="$MPICH_LIBS $LIBS"
  AC_LANG_PUSH([C])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[
#include <mpi.h>
#ifndef MPICH_VERSION
#error not MPICH
#endif
]], [[MPI_Init(0, 0); MPI_Finalize();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([cannot link an MPICH program with MPICH_CFLAGS='$MPICH_CFLAGS' MPICH_LIBS='$MPICH_LIBS'; install the Debian packages 'mpich libmpich-dev'])])
  AC_LANG_POP([C])
  CFLAGS=$slim_save_CFLAGS
  LIBS=$slim_save_LIBS
])

# Open MPI is optional: its tests run only when it is found (HAVE_OPENMPI).
AC_DEFUN([SLIM_CHECK_OPENMPI], [
  AC_ARG_VAR([OMPI_CC], [Open MPI compiler wrapper (default: mpicc.openmpi)])
  AC_ARG_VAR([OMPI_MPIEXEC], [Open MPI launcher (default: mpiexec.openmpi)])
  AC_ARG_WITH([openmpi],
    [AS_HELP_STRING([--without-openmpi], [do not build or run the Open MPI tests even when Open MPI is installed])],
    [], [with_openmpi=check])
  slim_have_ompi=no
  AS_IF([test "x$with_openmpi" != xno], [
    AC_PATH_PROG([OMPI_CC], [mpicc.openmpi])
    AC_PATH_PROG([OMPI_MPIEXEC], [mpiexec.openmpi])
    AS_IF([test -n "$OMPI_CC" && test -n "$OMPI_MPIEXEC"], [
      AC_MSG_CHECKING([Open MPI compile and link flags])
      AS_IF([test -z "$OMPI_CFLAGS$OMPI_LIBS" && $PKG_CONFIG --exists ompi-c 2>/dev/null],
        [OMPI_CFLAGS=`$PKG_CONFIG --cflags ompi-c`
         OMPI_LIBS=`$PKG_CONFIG --libs ompi-c`
         AC_MSG_RESULT([from pkg-config ompi-c])],
        [test -z "$OMPI_CFLAGS$OMPI_LIBS"],
        [SLIM_MPI_WRAPPER_FLAGS([$OMPI_CC], [-showme:compile], [-showme:link], [OMPI_CFLAGS], [OMPI_LIBS])
         AC_MSG_RESULT([from $OMPI_CC -showme])],
        [AC_MSG_RESULT([from the environment])])

      AC_MSG_CHECKING([whether Open MPI programs link])
      slim_save_CFLAGS=$CFLAGS
      slim_save_LIBS=$LIBS
      CFLAGS="$CFLAGS $OMPI_CFLAGS"
      LIBS="$OMPI_LIBS $LIBS"
      AC_LANG_PUSH([C])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[
#include <mpi.h>
#ifndef OPEN_MPI
#error not Open MPI
#endif
]], [[MPI_Init(0, 0); MPI_Finalize();]])],
        [AC_MSG_RESULT([yes]); slim_have_ompi=yes],
        [AC_MSG_RESULT([no])])
      AC_LANG_POP([C])
      CFLAGS=$slim_save_CFLAGS
      LIBS=$slim_save_LIBS
    ])
    AS_IF([test "x$with_openmpi" = xyes && test "x$slim_have_ompi" != xyes],
      [AC_MSG_ERROR([--with-openmpi: Open MPI not usable; install the Debian packages 'openmpi-bin libopenmpi-dev'])])
    AS_IF([test "x$slim_have_ompi" != xyes],
      [AC_MSG_WARN([Open MPI not found: its tests are skipped (optional; Debian packages 'openmpi-bin libopenmpi-dev')])])
  ])
  AS_IF([test "x$slim_have_ompi" != xyes], [OMPI_MPIEXEC=; OMPI_CC=; OMPI_CFLAGS=; OMPI_LIBS=])
  AC_ARG_VAR([OMPI_CFLAGS], [compiler flags for Open MPI programs])
  AC_ARG_VAR([OMPI_LIBS], [linker flags for Open MPI programs])
  AM_CONDITIONAL([HAVE_OPENMPI], [test "x$slim_have_ompi" = xyes])
])
