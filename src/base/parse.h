/* SPDX-License-Identifier: BSD-3-Clause */
// Parsing single values for configuration and command lines: integers,
// numbers and durations in a range, with one uniform message,
//   VAR='value': accepted values are <what>
// so that every bad value names its variable (or option) and the range.
#ifndef SLIM_BASE_PARSE_H
#define SLIM_BASE_PARSE_H

#include "base/error.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace slim {

// A bad configuration value or command-line option, with its uniform message.
class ConfigError : public Error {
public:
    using Error::Error;
};

// Parsers for single values. Each throws ConfigError with the message
//   VAR='value': accepted values are <what>
// UCX_SLIM_* values and command-line options use them, so messages stay uniform.
namespace parse {

// `s` without its leading and trailing `blanks` (by default spaces, tabs
// and line ends).
std::string_view trim(std::string_view s, std::string_view blanks = " \t\r\n");

// ASCII case-insensitive equality ("Stdout" names stdout).
bool iequals(std::string_view a, std::string_view b);

// Formats the uniform message; `accepted` completes "accepted values are ...".
std::string bad_value(std::string_view var, std::string_view value, std::string_view accepted);

// A decimal integer in [min, max] (no sign for positive values, no spaces).
std::int64_t integer(const char *var, const std::string& value, std::int64_t min, std::int64_t max);

// A finite decimal number ("0.05", "1e-3") in [min, max].
double real(const char *var, const std::string& value, double min, double max);

// A percentage: a finite decimal number with an optional trailing '%'
// ("5", "0.5%", " 2 % "), in [min, max]; none otherwise, for the caller to
// refuse in its own words.
std::optional<double> percentage(std::string_view text, double min, double max);

// A duration: a non-negative number followed by a unit ns, us, ms or s
// ("10us", "1.5ms", "1s"), in [min, max], rounded to the nearest nanosecond.
std::chrono::nanoseconds duration(const char *var, const std::string& value,
                                  std::chrono::nanoseconds min, std::chrono::nanoseconds max);

// Human form of a duration for messages: the largest of s, ms, us, ns that
// shows it exactly ("100ms", "10us", "1500ns").
std::string format_duration(std::chrono::nanoseconds d);

// Shortest decimal form of a double for messages ("0.05", "1e+20").
std::string format_real(double v);

// One item of a spec such as "L=4, P=0.5": the item, and its key and value
// when it has an '=' (spaces and tabs around each trimmed). The views point
// into the text.
struct SpecItem {
    std::string_view item;
    std::string_view key;
    std::string_view value;
    bool has_value = false;
};

// The comma-separated items of `text` (an empty one between two commas has
// no value; the text's end after a last comma is no item); each caller
// judges the keys and words its own messages.
std::vector<SpecItem> spec_items(std::string_view text);

}  // namespace parse

}  // namespace slim

#endif
