// SPDX-License-Identifier: BSD-3-Clause
#include "precision/precision_rules.h"

#include "base/parse.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace slim::precision {

namespace {

constexpr const char *accepted_forms =
        "accepted forms: LABEL=off, LABEL=keep:N[:truncate|round], "
        "LABEL=rel:EPS[:truncate|round], LABEL is [A-Za-z0-9_.-]+ or *";

constexpr double max_eps = 0.25;

// Where a rule came from, for messages: "" for inline, "path:line" for @file.
std::string error_text(std::string_view where, std::string_view token, std::string_view reason)
{
    std::string msg(policy_var);
    msg.append(": ");
    if (!where.empty()) {
        msg.append(where).append(": ");
    }
    msg.append("'").append(token).append("': ").append(reason).append("; ").append(accepted_forms);
    return msg;
}

using parse::trim;

std::vector<std::string_view> split(std::string_view s, char sep)
{
    std::vector<std::string_view> parts;
    for (;;) {
        const std::size_t at = s.find(sep);
        parts.push_back(s.substr(0, at));
        if (at == std::string_view::npos) {
            return parts;
        }
        s.remove_prefix(at + 1);
    }
}

struct Parsed {
    std::string label;
    std::optional<pack::Precision> precision;
};

// Throws a plain string (the reason); the caller adds token and place.
struct Reason {
    std::string text;
};

pack::Rounding parse_mode(std::string_view text)
{
    if (text == "truncate") {
        return pack::Rounding::truncate;
    }
    if (text == "round") {
        return pack::Rounding::nearest_even;
    }
    throw Reason{"mode must be truncate or round, not '" + std::string(text) + "'"};
}

int parse_keep(std::string_view text)
{
    int keep             = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), keep);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() ||
        keep < pack::kMinKeep || keep > pack::kMaxKeep) {
        throw Reason{"keep must be " + std::to_string(pack::kMinKeep) + ".." +
                     std::to_string(pack::kMaxKeep)};
    }
    return keep;
}

double parse_eps(std::string_view text)
{
    double eps = 0;
    // from_chars: locale-independent, unlike strtod.
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), eps);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() ||
        !std::isfinite(eps) || eps <= 0 || eps > max_eps) {
        throw Reason{"rel bound must be a number in (0, 0.25]"};
    }
    return eps;
}

Parsed parse_rule(std::string_view rule)
{
    const std::size_t eq = rule.find('=');
    if (eq == std::string_view::npos) {
        throw Reason{"missing '='"};
    }
    Parsed parsed;
    const std::string_view label = trim(rule.substr(0, eq));
    if (label.empty()) {
        throw Reason{"empty label"};
    }
    if (label != "*" && !valid_label(label)) {
        throw Reason{"label must be [A-Za-z0-9_.-]+ or *"};
    }
    parsed.label = std::string(label);

    const std::vector<std::string_view> parts = split(trim(rule.substr(eq + 1)), ':');
    const std::string_view kind               = parts[0];
    if (kind == "off") {
        if (parts.size() != 1) {
            throw Reason{"off takes no arguments"};
        }
        return parsed;
    }
    if (kind != "keep" && kind != "rel") {
        throw Reason{"unknown kind '" + std::string(kind) + "' (use off, keep or rel)"};
    }
    if (parts.size() < 2 || parts.size() > 3) {
        throw Reason{std::string(kind) + " takes a value and an optional mode"};
    }
    pack::Precision precision;
    precision.mode = parts.size() == 3 ? parse_mode(parts[2]) : pack::Rounding::truncate;
    if (kind == "keep") {
        precision.keep_bytes = parse_keep(parts[1]);
    } else {
        const double eps              = parse_eps(parts[1]);
        const std::optional<int> keep = keep_for_bound(eps, precision.mode);
        if (!keep) {
            char tightest[32];
            std::snprintf(tightest, sizeof tightest, "%g",
                          error_bound(pack::kMaxKeep, precision.mode));
            throw Reason{std::string("rel bound too strict: even keep 7 only guarantees ") +
                         tightest + "; use off to send exact values"};
        }
        precision.keep_bytes = *keep;
    }
    parsed.precision = precision;
    return parsed;
}

class Builder {
public:
    // Adds one rule (already trimmed; empty ones are skipped).
    void add(std::string_view rule, std::string_view where)
    {
        if (rule.empty()) {
            return;
        }
        Parsed parsed;
        try {
            parsed = parse_rule(rule);
        } catch (const Reason& r) {
            throw PrecisionRulesError(error_text(where, rule, r.text));
        }
        for (const Parsed& existing : rules_) {
            if (existing.label == parsed.label) {
                throw PrecisionRulesError(
                        error_text(where, rule, "duplicate label '" + parsed.label + "'"));
            }
        }
        rules_.push_back(std::move(parsed));
    }

    std::vector<Parsed> take() { return std::move(rules_); }

private:
    std::vector<Parsed> rules_;
};

constexpr std::uintmax_t kMaxPolicyFileBytes = 1U << 20;

// " (a FIFO)" and the like, for the message refusing a file that is not
// regular; "" when there is nothing more to say.
std::string file_kind(mode_t mode)
{
    if (S_ISFIFO(mode)) return " (a FIFO)";
    if (S_ISCHR(mode)) return " (a character device)";
    if (S_ISBLK(mode)) return " (a block device)";
    if (S_ISSOCK(mode)) return " (a socket)";
    return "";
}

// Reads the whole policy file through a descriptor that was checked first.
// It is opened non-blocking because opening a FIFO for reading waits for a
// writer (a hang inside MPI_Init); devices and pipes are refused too
// (@/dev/zero would be read without end), and so are directories (which an
// ifstream opens and then reads nothing from) and files larger than any
// policy needs.
std::string read_policy_file(std::string_view spec, const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        throw PrecisionRulesError(
                error_text("", spec, "cannot open " + path + ": " + std::strerror(err)));
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } const closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        throw PrecisionRulesError(
                error_text("", spec, "cannot stat " + path + ": " + std::strerror(err)));
    }
    if (S_ISDIR(st.st_mode)) {
        throw PrecisionRulesError(error_text("", spec, "cannot read " + path + ": Is a directory"));
    }
    if (!S_ISREG(st.st_mode)) {
        throw PrecisionRulesError(error_text("", spec,
                                             path + " is not a regular file" +
                                                     file_kind(st.st_mode) +
                                                     "; a policy file must be a regular file"));
    }
    const auto too_large = [&](const std::string& size) {
        return PrecisionRulesError(
                error_text("", spec,
                           path + " has " + size + " bytes; a policy file may have at most " +
                                   std::to_string(kMaxPolicyFileBytes) + " (1 MiB)"));
    };
    if (static_cast<std::uintmax_t>(st.st_size) > kMaxPolicyFileBytes) {
        throw too_large(std::to_string(st.st_size));
    }
    std::string text;
    char buffer[8192];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            const int err = errno;
            throw PrecisionRulesError(
                    error_text("", spec, "cannot read " + path + ": " + std::strerror(err)));
        }
        if (n == 0) {
            return text;
        }
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > kMaxPolicyFileBytes) {  // grew while being read
            throw too_large("more than " + std::to_string(kMaxPolicyFileBytes));
        }
    }
}

std::vector<Parsed> parse_file(std::string_view spec)
{
    const std::string path(trim(spec.substr(1)));
    if (path.empty()) {
        throw PrecisionRulesError(error_text("", spec, "'@' must be followed by a file path"));
    }
    std::istringstream in(read_policy_file(spec, path));
    Builder builder;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        std::string_view text{line};
        text = text.substr(0, text.find('#'));
        builder.add(trim(text), path + ":" + std::to_string(number));
    }
    return builder.take();
}

}  // namespace

double error_bound(int keep_bytes, pack::Rounding mode)
{
    const int bits = 8 * keep_bytes - (mode == pack::Rounding::truncate ? 12 : 11);
    return std::ldexp(1.0, -bits);
}

std::optional<int> keep_for_bound(double eps, pack::Rounding mode)
{
    for (int keep = pack::kMinKeep; keep <= pack::kMaxKeep; ++keep) {
        if (error_bound(keep, mode) <= eps) {
            return keep;
        }
    }
    return std::nullopt;
}

bool valid_label(std::string_view label)
{
    const auto ok = [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.' || c == '-';
    };
    return !label.empty() && std::all_of(label.begin(), label.end(), ok);
}

PrecisionRules PrecisionRules::parse(std::string_view spec)
{
    const std::string_view text = trim(spec);
    std::vector<Parsed> parsed;
    if (!text.empty() && text.front() == '@') {
        parsed = parse_file(text);
    } else {
        Builder builder;
        for (const std::string_view rule : split(text, ';')) {
            builder.add(trim(rule), "");
        }
        parsed = builder.take();
    }
    PrecisionRules rules;
    for (Parsed& p : parsed) {
        rules.rules_.push_back(Rule{std::move(p.label), p.precision});
    }
    return rules;
}

std::optional<pack::Precision> PrecisionRules::lookup(std::string_view label) const
{
    const Rule *fallback = nullptr;
    for (const Rule& rule : rules_) {
        if (rule.label == label) {
            return rule.precision;
        }
        if (rule.label == "*") {
            fallback = &rule;
        }
    }
    return fallback != nullptr ? fallback->precision : std::nullopt;
}

bool PrecisionRules::lossy() const
{
    return std::any_of(rules_.begin(), rules_.end(),
                       [](const Rule& r) { return r.precision.has_value(); });
}

}  // namespace slim::precision
