/* SPDX-License-Identifier: BSD-3-Clause */
// Reading reports back in tests, through nlohmann/json: `ordered_json`
// keeps keys in the order they were written, so tests can check the order
// the schema documents.
#ifndef SLIM_TESTS_JSON_CHECK_H
#define SLIM_TESTS_JSON_CHECK_H

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace slim_test {

using Json = nlohmann::ordered_json;

// Throws nlohmann::json::parse_error (Catch reports it) unless `s` is
// exactly one JSON value, trailing newline allowed.
inline Json parse_json(const std::string& s) { return Json::parse(s); }

// An object's keys in order.
inline std::vector<std::string> keys(const Json& object)
{
    std::vector<std::string> out;
    for (const auto& item : object.items()) {
        out.push_back(item.key());
    }
    return out;
}

}  // namespace slim_test

#endif
