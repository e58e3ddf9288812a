// SPDX-License-Identifier: BSD-3-Clause
#include "pack/label_table.h"

namespace slim::pack {

std::uint32_t LabelTable::intern(std::string_view label)
{
    if (label.empty()) {
        return 0;
    }
    const std::string key(label);
    const auto it = index_.find(key);
    if (it != index_.end()) {
        return it->second;
    }
    const auto id = static_cast<std::uint32_t>(labels_.size());
    labels_.push_back(key);
    index_.emplace(key, id);
    return id;
}

}  // namespace slim::pack
