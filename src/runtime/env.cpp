// SPDX-License-Identifier: BSD-3-Clause
#include "env.h"

#include <cstdlib>

namespace slim {

EnvLookup process_environment()
{
    return [](const char *name) -> std::optional<std::string> {
        const char *value = std::getenv(name);
        if (value == nullptr) {
            return std::nullopt;
        }
        return std::string{value};
    };
}

}  // namespace slim
