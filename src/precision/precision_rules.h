/* SPDX-License-Identifier: BSD-3-Clause */
// Precision rules (UCX_SLIM_POLICY, the variable's name kept for users):
// map the labels that applications give to slim_mark() to a precision, or
// to "not packed". "Policy" in the code means what decides the link width
// (predict/policy_registry.h); these are rules, not a policy.
//
//   UCX_SLIM_POLICY="halo=keep:4:round;fft=rel:1e-6;*=off"
//   UCX_SLIM_POLICY=@/path/to/file      (one rule per line, '#' comments)
//
// Rules: LABEL=off | LABEL=keep:N[:truncate|round] (N 2..7, default truncate)
//        | LABEL=rel:EPS[:truncate|round] (EPS in (0, 0.25]: the smallest keep
//        whose relative error bound is <= EPS). LABEL is [A-Za-z0-9_.-]+ or
//        `*`, the rule for labels without their own. Empty rules are ignored,
//        so a trailing ';' is fine. Every malformed input throws PrecisionRulesError.
#ifndef SLIM_PRECISION_PRECISION_RULES_H
#define SLIM_PRECISION_PRECISION_RULES_H

#include "base/error.h"
#include "pack/codec.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace slim::precision {

constexpr const char *policy_var = "UCX_SLIM_POLICY";

// The message names the offending token (and file:line for @file) and lists
// the accepted forms.
class PrecisionRulesError : public Error {
public:
    using Error::Error;
};

// Relative error bound of a finite normal value packed at `keep` bytes
// (codec.h): truncate 2^-(8k-12), round 2^-(8k-11).
double error_bound(int keep_bytes, pack::Rounding mode);

// The smallest keep in kMinKeep..kMaxKeep whose bound is <= eps, if any.
std::optional<int> keep_for_bound(double eps, pack::Rounding mode);

// True for [A-Za-z0-9_.-]+ (not `*`): what slim_mark() accepts as a label.
bool valid_label(std::string_view label);

class PrecisionRules {
public:
    PrecisionRules() = default;  // packs nothing

    // Parses an UCX_SLIM_POLICY value: "" (packs nothing), inline rules, or
    // "@path". Throws PrecisionRulesError.
    static PrecisionRules parse(std::string_view spec);

    // The precision for `label`: its own rule, else the `*` rule, else none
    // (not packed). An `off` rule also yields none.
    std::optional<pack::Precision> lookup(std::string_view label) const;

    // True when some rule packs.
    bool lossy() const;

private:
    struct Rule {
        std::string label;
        std::optional<pack::Precision> precision;  // none: off
    };
    std::vector<Rule> rules_;
};

}  // namespace slim::precision

#endif
