/* SPDX-License-Identifier: BSD-3-Clause */
// Region labels, interned: a node keeps a 32-bit index, the text is kept
// once for messages (RegionRegistry::release). Id 0 is the empty label.
// Not thread-safe: the region registry's writers use it under their mutex.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace slim::pack {

class LabelTable {
public:
    // The id of `label`, added if new.
    std::uint32_t intern(std::string_view label);
    // The text of an id intern() returned.
    const std::string& text(std::uint32_t id) const { return labels_[id]; }

private:
    std::vector<std::string> labels_{std::string()};
    std::unordered_map<std::string, std::uint32_t> index_;
};

}  // namespace slim::pack
