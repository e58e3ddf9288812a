/* SPDX-License-Identifier: BSD-3-Clause */
// What the command-line tools (slim-replay, slimlinkd) share around CLI11:
// one error type for a bad command line (exit 2), the guard against an
// option taken as another option's value, the tail of parsing (help, an
// unknown option or a stray argument named), and the text of --link forms.
#pragma once

#include "base/error.h"

#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>

namespace slim::tools {

// A bad command line: the message names the option and what it accepts.
class UsageError : public Error {
public:
    using Error::Error;
};

inline constexpr const char *link_forms =
        "a preset (ib-qdr, ib-edr, ib-hdr, ib-ndr, eee-1000base-t, eee-10gbase-t, "
        "eee-10gbase-kr, eee-25gbase-t, eee-100g-deep, eee-100g-fast), comma-separated "
        "KEY=VALUE, any subset in any order, of L (lanes: 1, 2, 4, 8 or 12), P (watts per "
        "lane), low (low-power width, 1 to L), tau (width change time, a duration) and lowP "
        "(the low width's power as a fraction of full), e.g. L=4,P=0.5,low=1,tau=10us, or a "
        "preset followed by KEY=VALUE items that change it (eee presets take P, Tw, Ts and "
        "lowP), e.g. eee-10gbase-t,lowP=0.2";

// CLI11 takes the argument after an option as its value even when it is
// another option ("--socket --status" forgot the path): refused, naming it.
inline const std::string& value_of(const char *option, const char *type, const std::string& v)
{
    if (v.rfind("--", 0) == 0) {
        throw UsageError(std::string(option) + ": 1 required " + type + " missing ('" + v +
                         "' is an option)");
    }
    return v;
}

// Parses argv with `app` (made with allow_extras()). --help: the text goes
// to `help` and true is returned. A parse error, an unknown option or a
// stray argument throws UsageError naming it (`stray_hint` is added to the
// stray argument's message).
inline bool parse_command_line(CLI::App& app, int argc, char **argv, std::string& help,
                               const std::string& stray_hint = {})
{
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        help = app.help();
        return true;
    } catch (const CLI::ParseError& e) {
        throw UsageError(e.what());
    }
    // allow_extras: what CLI11 did not take, an unknown option first.
    for (const std::string& arg : app.remaining()) {
        if (arg.size() > 1 && arg[0] == '-') {
            throw UsageError("unknown option '" + arg.substr(0, arg.find('=')) + "'");
        }
    }
    if (!app.remaining().empty()) {
        throw UsageError("unexpected argument '" + app.remaining().front() + "'" + stray_hint);
    }
    return false;
}

}  // namespace slim::tools
