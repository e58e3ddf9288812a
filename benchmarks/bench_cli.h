// SPDX-License-Identifier: BSD-3-Clause
// Command lines of the C++ benchmarks, with CLI11. Numbers are read by
// slim::parse (src/base/parse.h), decimal only, so a bad one gets the message
// every slimlink tool gives, naming the option and its range:
//   --events='0': accepted values are integers from 1 to 1000000000000
// Header-only: each benchmark is one program.
#ifndef SLIMLINK_BENCH_CLI_H
#define SLIMLINK_BENCH_CLI_H

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <string>

#include "base/parse.h"

namespace bench {

// --name N: an integer in [min, max] into `out`, whose value now is the
// default; given twice, the last one counts (as before CLI11).
template <typename T>
CLI::Option* add_integer(CLI::App& app, const std::string& name, T& out, std::int64_t min,
                         std::int64_t max, const std::string& text)
{
    const auto set = [&out, name, min, max](const std::string& v) {
        try {
            out = static_cast<T>(slim::parse::integer(name.c_str(), v, min, max));
        } catch (const slim::ConfigError& e) {
            throw CLI::ValidationError(e.what());
        }
    };
    return app.add_option_function<std::string>(name, set,
                                                text + ", " + std::to_string(min) + ".." +
                                                        std::to_string(max) + " (default " +
                                                        std::to_string(out) + ")")
            ->type_name("N")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// Parses the command line. Returns -1 to go on, else the exit status: 0
// after printing --help, 2 (the benchmarks' usage error) after printing what
// was wrong.
inline int parse(CLI::App& app, int argc, char** argv)
{
    try {
        app.parse(argc, argv);
        return -1;
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::ParseError& e) {
        std::cerr << app.get_name() << ": " << e.what() << "\nRun with --help for more information.\n";
        return 2;
    }
}

}  // namespace bench

#endif
