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
#include <vector>

#include "base/parse.h"

namespace bench {

// The value `v` given to option `name`, an integer in [min, max]; else the
// error that names the option and its range, for CLI11 to print.
inline std::int64_t integer_value(const std::string& name, const std::string& v,
                                  std::int64_t min, std::int64_t max)
{
    try {
        return slim::parse::integer(name.c_str(), v, min, max);
    } catch (const slim::ConfigError& e) {
        throw CLI::ValidationError(e.what());
    }
}

inline std::string range_text(const std::string& text, std::int64_t min, std::int64_t max)
{
    return text + ", " + std::to_string(min) + ".." + std::to_string(max);
}

// --name N: an integer in [min, max] into `out`, whose value now is the
// default; given twice, the last one counts (as before CLI11).
template <typename T>
CLI::Option* add_integer(CLI::App& app, const std::string& name, T& out, std::int64_t min,
                         std::int64_t max, const std::string& text)
{
    const auto set = [&out, name, min, max](const std::string& v) {
        out = static_cast<T>(integer_value(name, v, min, max));
    };
    return app.add_option_function<std::string>(name, set,
                                                range_text(text, min, max) + " (default " +
                                                        std::to_string(out) + ")")
            ->type_name("N")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// --name N, repeatable: each integer in [min, max] appended to `out`.
template <typename T>
CLI::Option* add_integers(CLI::App& app, const std::string& name, std::vector<T>& out,
                          std::int64_t min, std::int64_t max, const std::string& text)
{
    const auto add = [&out, name, min, max](const std::vector<std::string>& values) {
        for (const std::string& v : values) {
            out.push_back(static_cast<T>(integer_value(name, v, min, max)));
        }
    };
    return app.add_option_function<std::vector<std::string>>(name, add,
                                                             range_text(text, min, max))
            ->type_name("N")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
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
