/* SPDX-License-Identifier: BSD-3-Clause */
// What the rank and node reports share to write JSON through nlohmann/json:
// keys in the order the schema documents them (ordered_json), numbers with
// the decimals the text report shows, and one line per record.
#ifndef SLIM_RUNTIME_REPORT_JSON_H
#define SLIM_RUNTIME_REPORT_JSON_H

#include "packing_monitor.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace slim {

using ReportJson = nlohmann::ordered_json;

// The error bound: the exact power of two, or null when nothing was packed.
ReportJson json_error_bound(ErrorBound bound);

// `v` rounded to `decimals` decimals as format_fixed rounds it (no -0); the
// optional one is null when empty.
ReportJson json_fixed(double v, int decimals);
ReportJson json_fixed(const std::optional<double>& v, int decimals);

// The text, or null when it is empty (unknown).
ReportJson json_text_or_null(const std::string& text);

// Stable time per width of a port of `lanes` lanes (ns, indexed by width):
// keys "1" to `lanes`, and "0", an EEE port's low-power idle, only when the
// port spent time there.
ReportJson width_times_json(const std::int64_t *ns, unsigned lanes);
// The same for text, the widths with time only: " LPI 0.123 s 1x 2.655 s".
std::string width_times_text(const std::int64_t *ns, unsigned lanes);

// `j` as one line of JSON, '\n' included. Bytes that are not UTF-8 (a host
// name, a path) become U+FFFD instead of failing the report.
std::string json_line(const ReportJson& j);

}  // namespace slim

#endif
