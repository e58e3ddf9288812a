// SPDX-License-Identifier: BSD-3-Clause
#include "predict/policy_registry.h"

#include "base/error.h"
#include "base/parse.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <stdexcept>

namespace slim::link {

namespace {

using namespace std::chrono_literals;

// A policy that takes no parameter, and where it may run.
struct Entry {
    const char *name;
    PolicyKind kind;
    bool live;    // UCX_SLIM_PREDICTOR
    bool replay;  // slim-replay --policy
};

// The live ones in live_policy_forms' order, the default first.
constexpr Entry kEntries[] = {
        {"adaptive", PolicyKind::adaptive, true, true},
        {"spps", PolicyKind::spps, true, true},
        {"pps", PolicyKind::pps, true, true},
        // Live: an idle timeout of PolicySpec's default (100 us); a replay
        // names its length (timeout:DURATION).
        {"timeout", PolicyKind::timeout, true, false},
        {"off", PolicyKind::always_on, true, false},
        {"always-on", PolicyKind::always_on, false, true},
        {"oracle", PolicyKind::oracle, false, true},
};

PolicySpec named(const char *name, PolicyKind kind)
{
    PolicySpec spec;
    spec.kind          = kind;
    spec.registry_name = name;
    return spec;
}

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

}  // namespace

PolicySpec default_live_policy() { return live_policy(kEntries[0].name); }

PolicySpec live_policy(std::string_view name)
{
    const std::string want = lower(name);
    for (const Entry& e : kEntries) {
        if (e.live && want == e.name) {
            return named(e.name, e.kind);
        }
    }
    throw Error("unknown predictor '" + std::string(name) + "' (expected " + live_policy_forms +
                ")");
}

const std::vector<std::string>& live_policy_names()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const Entry& e : kEntries) {
            if (e.live) {
                v.emplace_back(e.name);
            }
        }
        return v;
    }();
    return names;
}

PolicySpec replay_policy(std::string_view name)
{
    const std::string v(name);
    const std::string timeout_prefix = "timeout:";
    if (v.rfind(timeout_prefix, 0) == 0) {
        PolicySpec spec = named("timeout", PolicyKind::timeout);
        spec.timeout_ns =
                parse::duration("--policy timeout", v.substr(timeout_prefix.size()), 0ns, 1s)
                        .count();
        return spec;
    }
    for (const auto& [prefix, key] :
         {std::pair{std::string("context:"), predict::ContextKey::events},
          std::pair{std::string("runs:"), predict::ContextKey::runs}}) {
        if (v.rfind(prefix, 0) != 0) {
            continue;
        }
        const std::string depth = v.substr(prefix.size());
        if (depth.size() != 1 || depth[0] < '1' || depth[0] > '8') {
            throw Error("--policy " + v + ": the depth is 1 to 8");
        }
        PolicySpec spec    = named("", PolicyKind::context);
        spec.registry_name = v;
        spec.context.depth = static_cast<std::size_t>(depth[0] - '0');
        spec.context.key   = key;
        return spec;
    }
    for (const Entry& e : kEntries) {
        if (e.replay && v == e.name) {
            return named(e.name, e.kind);
        }
    }
    throw Error("unknown policy '" + v + "'");
}

}  // namespace slim::link
