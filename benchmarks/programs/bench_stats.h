// SPDX-License-Identifier: BSD-3-Clause
// What the C++ benchmarks report over their rounds. Header-only: each
// benchmark is one program.
#ifndef SLIMLINK_BENCH_STATS_H
#define SLIMLINK_BENCH_STATS_H

#include <algorithm>
#include <vector>

namespace bench {

// The median of `v` (the upper one of an even count), which must not be
// empty: rounds disturbed by other load on a shared machine fall outside it.
inline double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace bench

#endif
