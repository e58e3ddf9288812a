// SPDX-License-Identifier: BSD-3-Clause
// A small OTF2 archive written with the OTF2 writer API, for the tests of
// slim-replay's OTF2 reader (tests/unit/test_otf2_trace.cpp, which lists the
// events it must give, and tests/replay/slim-replay.test through
// write-otf2-sample). Two MPI ranks, one location each (ids 0 and 1, as
// Score-P numbers ranks' master threads), a 2.5 GHz clock (0.4 ns per tick)
// with a global offset of 10^9 ticks, and regions that exercise every rule
// of the mapping in src/tools/otf2_trace.h: non-MPI and non-communicating
// MPI regions, MPI_Wait nested in MPI_Allreduce, MPI_Test with and without a
// completed request, sends to two peers and on two communicators, broadcasts
// from two roots, and a region still open at the end of rank 1's events.
#pragma once

#include <cstdint>
#include <string>

namespace slim::test {

constexpr std::uint64_t otf2_sample_resolution = 2'500'000'000;  // ticks per second
constexpr std::uint64_t otf2_sample_offset     = 1'000'000'000;  // ticks

// Writes the archive into `dir` (created if missing; it must not hold an
// archive named "traces" yet): dir/traces.otf2 is its anchor file. Throws
// std::runtime_error when OTF2 refuses. With `hostile_names`, the location,
// location group and two regions (MPI_Send, MPI_Recv) are named with
// terminal escape sequences after their usual names, and rank 1's events
// end with a Leave of MPI_Send while MPI_Recv is open (an error the reader
// reports naming both regions); rank 0's events are unchanged.
void write_otf2_sample(const std::string& dir, bool hostile_names = false);

}  // namespace slim::test
