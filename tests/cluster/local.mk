# SPDX-License-Identifier: BSD-3-Clause
# tests/cluster — jobs under a real Slurm (included by the top Makefile.am).
# slurm.test starts its own cluster (scripts/slurm-bed: munged, slurmctld and
# one slurmd on each host of scripts/two-host-bed) and skips without root,
# Slurm, or the SPANK plugin (configure without <slurm/spank.h>).
TESTS += tests/cluster/slurm.test
EXTRA_DIST += tests/cluster/slurm.test
