// SPDX-License-Identifier: BSD-3-Clause
// Link specs and presets (link_profile.h). The figures and their sources are
// in slim-replay(1), LINK PROFILES; keep the two together.
#include "predict/link_profile.h"

#include "base/error.h"
#include "base/parse.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <string_view>

namespace slim::link {

namespace {

constexpr double kMaxLaneWatts = 100.0;
constexpr std::chrono::nanoseconds kMaxTau{1'000'000'000};

// The InfiniBand presets share the thesis's port (0.5 W per lane, one lane
// left up, 10 us per change): no vendor publishes per-lane power or
// reactivation times for EDR, HDR or NDR ports. What they take from the
// published record is the low width's power, the switch "at 43 % of its
// nominal power" in 1X mode (thesis §2.6). The EEE presets take Tw and Ts
// from IEEE 802.3 Clause 78 and LPI at a tenth of active power.
const std::vector<LinkPreset> kPresets = {
        {"ib-qdr", "L=4,P=0.5,low=1,tau=10us",
         "4X QDR as the thesis models it (sec. 2.6, 4.5.2): power proportional to the lanes up"},
        {"ib-edr", "L=4,P=0.5,low=1,tau=10us,lowP=0.43",
         "4X EDR (25 Gb/s lanes): the thesis's port, 1X at 43 % of full power"},
        {"ib-hdr", "L=4,P=0.5,low=1,tau=10us,lowP=0.43",
         "4X HDR (50 Gb/s lanes): the thesis's port, 1X at 43 % of full power"},
        {"ib-ndr", "L=4,P=0.5,low=1,tau=10us,lowP=0.43",
         "4X NDR (100 Gb/s lanes): the thesis's port, 1X at 43 % of full power"},
        {"eee-1000base-t", "P=1,Tw=16.5us,Ts=182us,lowP=0.1",
         "1000BASE-T: Tw 16.5 us, Ts 182 us (Clause 78)"},
        {"eee-10gbase-t", "P=1,Tw=4.48us,Ts=2.88us,lowP=0.1",
         "10GBASE-T: Tw 4.48 us, Ts 2.88 us (Clause 78)"},
        {"eee-10gbase-kr", "P=1,Tw=15.4us,Ts=15.4us,lowP=0.1",
         "10GBASE-KR and 25GBASE-KR: Tw 15.4 us (Clause 78); Ts taken equal to Tw"},
        {"eee-25gbase-t", "P=1,Tw=1.8us,Ts=1.8us,lowP=0.1",
         "25GBASE-T: Tw 1.8 us (Clause 78); Ts taken equal to Tw"},
        {"eee-100g-deep", "P=1,Tw=5.5us,Ts=5.5us,lowP=0.1",
         "40G and 100G, deep sleep: Tw 5.5 us (Clause 78); Ts taken equal to Tw"},
        {"eee-100g-fast", "P=1,Tw=340ns,Ts=340ns,lowP=0.1",
         "40G and 100G, fast wake: Tw 0.34 us (Clause 78); Ts taken equal to Tw"},
};

// Spaces and tabs only: anything else is left for the value's parser to judge.
std::string_view trim(std::string_view s) { return parse::trim(s, " \t"); }

[[noreturn]] void reject(std::string_view key, std::string_view value, std::string_view accepted)
{
    throw Error(parse::bad_value(key, value, accepted));
}

unsigned parse_lanes(const std::string& value)
{
    for (const char *lanes : {"1", "2", "4", "8", "12"}) {
        if (value == lanes) {
            return static_cast<unsigned>(std::stoul(value));
        }
    }
    reject("L", value, "1, 2, 4, 8 or 12 (lanes)");
}

double parse_lane_watts(const std::string& value)
{
    // parse::real gives a closed range; P = 0 would make the baseline 0 J and
    // every saving 0/0.
    const std::string accepted =
            "numbers greater than 0 and at most 100 (watts per lane; eee: the port's watts)";
    double watts = 0.0;
    try {
        watts = parse::real("P", value, 0.0, kMaxLaneWatts);
    } catch (const ConfigError&) {
        reject("P", value, accepted);
    }
    if (watts <= 0.0) {
        reject("P", value, accepted);
    }
    return watts;
}

// Read last: its range depends on L, which may come after it.
unsigned parse_low_width(const std::string& value, unsigned lanes)
{
    return static_cast<unsigned>(parse::integer("low", value, 1, lanes));
}

TimeNs parse_time(const char *key, const std::string& value)
{
    return parse::duration(key, value, std::chrono::nanoseconds{0}, kMaxTau).count();
}

double parse_low_power_fraction(const std::string& value)
{
    // 0 would make a narrow port free; more than 1 costlier than a wide one.
    const std::string accepted =
            "numbers greater than 0 and at most 1 (the low width's or LPI's power as a fraction "
            "of full power, e.g. 0.43)";
    double fraction = 0.0;
    try {
        fraction = parse::real("lowP", value, 0.0, 1.0);
    } catch (const ConfigError&) {
        reject("lowP", value, accepted);
    }
    if (fraction <= 0.0) {
        reject("lowP", value, accepted);
    }
    return fraction;
}

const LinkPreset *find_preset(std::string_view name)
{
    for (const LinkPreset& p : kPresets) {
        if (name == p.name) {
            return &p;
        }
    }
    return nullptr;
}

enum Key { kLanes, kWatts, kLow, kTau, kLowP, kTw, kTs, kKeys };
constexpr std::string_view kKeyNames[kKeys] = {"L", "P", "low", "tau", "lowP", "Tw", "Ts"};
constexpr const char *kIbKeys               = "L, P, low, tau and lowP";
constexpr const char *kEeeKeys              = "P, Tw, Ts and lowP";

bool allowed(LinkKind kind, Key key)
{
    if (kind == LinkKind::eee) {
        return key == kWatts || key == kLowP || key == kTw || key == kTs;
    }
    return key != kTw && key != kTs;
}

// Applies "key=value" items to `config`; `seen` refuses a key given twice.
void apply_items(std::string_view rest, LinkConfig& config, bool (&seen)[kKeys])
{
    std::string low_text;
    const char *keys = config.kind == LinkKind::eee ? kEeeKeys : kIbKeys;
    for (const parse::SpecItem& item : parse::spec_items(rest)) {
        if (!item.has_value) {
            throw Error("link config item '" + std::string(item.item) +
                        "': expected key=value with a key " + keys + " (a preset name, one of " +
                        preset_names() + ", may only come first)");
        }
        const std::string_view name = item.key;
        const std::string value{item.value};
        const auto index = static_cast<std::size_t>(
                std::find(std::begin(kKeyNames), std::end(kKeyNames), name) -
                std::begin(kKeyNames));
        if (index == kKeys || !allowed(config.kind, static_cast<Key>(index))) {
            throw Error("link config key '" + std::string(name) + "' is unknown" +
                        (index == kKeys ? ""
                         : config.kind == LinkKind::eee
                                 ? " for an eee port (one active width and LPI)"
                                 : " for an InfiniBand port (Tw and Ts are eee-* keys)") +
                        ": accepted keys are " + keys);
        }
        if (seen[index]) {
            throw Error("link config key '" + std::string(name) + "' is given more than once");
        }
        seen[index] = true;
        switch (static_cast<Key>(index)) {
        case kLanes: config.lanes = parse_lanes(value); break;
        case kWatts: config.lane_watts = parse_lane_watts(value); break;
        case kLow: low_text = value; break;
        case kTau: config.tau_ns = parse_time("tau", value); break;
        case kLowP: config.low_power_fraction = parse_low_power_fraction(value); break;
        case kTw: config.tau_ns = parse_time("Tw", value); break;
        case kTs: config.sleep_ns = parse_time("Ts", value); break;
        case kKeys: break;
        }
    }
    if (seen[kLow]) {
        config.low_width = parse_low_width(low_text, config.lanes);
    } else if (config.kind == LinkKind::infiniband) {
        // A preset's low width may not fit the L given after it.
        config.low_width = std::min(config.low_width, config.lanes);
    }
}

LinkConfig from_preset(const LinkPreset& preset)
{
    LinkConfig config;
    config.profile = preset.name;
    if (std::string_view(preset.name).rfind("eee-", 0) == 0) {
        config.kind      = LinkKind::eee;
        config.lanes     = 1;
        config.low_width = 0;
    }
    bool seen[kKeys] = {};
    apply_items(preset.spec, config, seen);
    return config;
}

}  // namespace

const std::vector<LinkPreset>& link_presets() { return kPresets; }

std::string preset_names()
{
    std::string names;
    for (const LinkPreset& p : kPresets) {
        names.append(names.empty() ? "" : ", ").append(p.name);
    }
    return names;
}

LinkConfig parse_link_config(const std::string& text)
{
    std::string_view rest        = text;
    const auto comma             = rest.find(',');
    const std::string_view first = trim(rest.substr(0, comma));
    LinkConfig config;
    if (!first.empty() && first.find('=') == std::string_view::npos) {
        const LinkPreset *preset = find_preset(first);
        if (!preset) {
            throw Error("link profile '" + std::string(first) +
                        "' is unknown: accepted presets are " + preset_names() +
                        ", or key=value items alone");
        }
        config = from_preset(*preset);
        rest   = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    bool seen[kKeys] = {};
    apply_items(rest, config, seen);
    return config;
}

std::string link_spec(const LinkConfig& config)
{
    const auto duration = [](TimeNs ns) {
        return parse::format_duration(std::chrono::nanoseconds{ns});
    };
    std::string spec = config.profile.empty() ? std::string() : config.profile + ",";
    if (config.kind == LinkKind::eee) {
        spec += "P=" + parse::format_real(config.lane_watts) + ",Tw=" + duration(config.tau_ns) +
                ",Ts=" + duration(config.sleep_ns.value_or(config.tau_ns));
    } else {
        spec += "L=" + std::to_string(config.lanes) +
                ",P=" + parse::format_real(config.lane_watts) +
                ",low=" + std::to_string(config.low_width) + ",tau=" + duration(config.tau_ns);
    }
    if (config.low_power_fraction) {
        spec += ",lowP=" + parse::format_real(*config.low_power_fraction);
    }
    return spec;
}

}  // namespace slim::link
