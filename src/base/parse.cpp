// SPDX-License-Identifier: BSD-3-Clause
#include "base/parse.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

namespace slim {

namespace parse {

namespace {

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }


// Parses all of `text` as a double; from_chars is locale-independent, unlike
// strtod, which matters inside applications that call setlocale().
bool whole_double(std::string_view text, double& out)
{
    if (text.empty() || text.front() == '+') {
        return false;
    }
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size() && std::isfinite(out);
}

struct Unit {
    const char *suffix;
    std::int64_t ns;
};
// Longest suffix first so "ms" is not read as "m" + "s".
constexpr std::array<Unit, 4> duration_units{
        {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}}};

}  // namespace

std::string_view trim(std::string_view s, std::string_view blanks)
{
    const auto first = s.find_first_not_of(blanks);
    if (first == std::string_view::npos) {
        return {};
    }
    return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

bool iequals(std::string_view a, std::string_view b)
{
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (ascii_lower(a[i]) != ascii_lower(b[i])) {
            return false;
        }
    }
    return true;
}

std::string bad_value(std::string_view var, std::string_view value, std::string_view accepted)
{
    std::string msg;
    msg.reserve(var.size() + value.size() + accepted.size() + 32);
    msg.append(var).append("='").append(value).append("': accepted values are ").append(accepted);
    return msg;
}

std::int64_t integer(const char *var, const std::string& value, std::int64_t min, std::int64_t max)
{
    const std::string accepted =
            "integers from " + std::to_string(min) + " to " + std::to_string(max);
    std::int64_t result  = 0;
    const char *first    = value.data();
    const char *last     = value.data() + value.size();
    const auto [end, ec] = std::from_chars(first, last, result);
    if (value.empty() || ec != std::errc{} || end != last || result < min || result > max) {
        throw ConfigError(bad_value(var, value, accepted));
    }
    return result;
}

double real(const char *var, const std::string& value, double min, double max)
{
    double result = 0;
    if (!whole_double(value, result) || result < min || result > max) {
        throw ConfigError(bad_value(
                var, value, "numbers from " + format_real(min) + " to " + format_real(max)));
    }
    return result;
}

std::optional<double> percentage(std::string_view text, double min, double max)
{
    text = trim(text);
    if (!text.empty() && text.back() == '%') {
        text.remove_suffix(1);
        text = trim(text);
    }
    double result = 0;
    if (!whole_double(text, result) || result < min || result > max) {
        return std::nullopt;
    }
    return result;
}

std::chrono::nanoseconds duration(const char *var, const std::string& value,
                                  std::chrono::nanoseconds min, std::chrono::nanoseconds max)
{
    const std::string accepted = "durations from " + format_duration(min) + " to " +
                                 format_duration(max) + " with a unit ns, us, ms or s (e.g. 10us)";
    const std::string_view text{value};
    for (const Unit& unit : duration_units) {
        const std::string_view suffix{unit.suffix};
        if (text.size() <= suffix.size() || text.substr(text.size() - suffix.size()) != suffix) {
            continue;
        }
        const std::string_view number = text.substr(0, text.size() - suffix.size());
        double amount                 = 0;
        // "1.5ms" is fine, "5 ms", "-1s" and "1e999s" are not.
        if (!whole_double(number, amount) || amount < 0) {
            break;
        }
        // Round first, then compare exactly: "0.01ms" must equal a 10us bound
        // even though 0.01 * 1e6 is not exactly 10000 in binary.
        const double ns = amount * static_cast<double>(unit.ns);
        if (ns >= 9.2e18) {  // would overflow int64 nanoseconds (~292 years)
            break;
        }
        const std::chrono::nanoseconds result{static_cast<std::int64_t>(std::llround(ns))};
        if (result < min || result > max) {
            break;
        }
        return result;
    }
    throw ConfigError(bad_value(var, value, accepted));
}

std::string format_duration(std::chrono::nanoseconds d)
{
    const std::int64_t ns = d.count();
    for (auto it = duration_units.rbegin(); it != duration_units.rend(); ++it) {
        if (ns != 0 && ns % it->ns == 0) {
            return std::to_string(ns / it->ns) + it->suffix;
        }
    }
    return std::to_string(ns) + "ns";
}

std::vector<SpecItem> spec_items(std::string_view text)
{
    std::vector<SpecItem> items;
    std::string_view rest = text;
    while (!trim(rest, " \t").empty()) {
        const auto comma = rest.find(',');
        SpecItem i;
        i.item = trim(rest.substr(0, comma), " \t");
        rest   = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        const auto equals = i.item.find('=');
        if (equals != std::string_view::npos) {
            i.has_value = true;
            i.key       = trim(i.item.substr(0, equals), " \t");
            i.value     = trim(i.item.substr(equals + 1), " \t");
        }
        items.push_back(i);
    }
    return items;
}

std::string format_real(double v)
{
    std::array<char, 32> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return ec == std::errc{} ? std::string(buf.data(), end) : std::string("?");
}

}  // namespace parse

}  // namespace slim
