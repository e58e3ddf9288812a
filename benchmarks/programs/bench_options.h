/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Command lines of the benchmark programs, one set of rules for the C and
 * the C++ ones: a number is decimal and must be all of the option's value
 * and within the option's range, else the program names the option and its
 * range and exits 2; --help prints the usage and exits 0; given twice, the
 * last value counts (except where an option is documented as repeatable).
 *
 *   C++ (codec-, controller-, mark-, predictor-, record-, replay-,
 *   service-bench): CLI11, numbers read by slim::parse (src/base/parse.h),
 *   so a bad one gets the message every slimlink tool gives:
 *     --events='0': accepted values are integers from 1 to 1000000000000
 *   C (slimlink-cg, slimlink-fft, packed-bw, slimlink-osu-like,
 *   slimlink-patterns): getopt_long loops with the bench_parse_* parsers;
 *   each takes all of an option's value or refuses it, and the caller names
 *   the option and its range. These are MPI programs: --help prints on
 *   rank 0 and every rank leaves MPI.
 *
 * Header-only (inline / static inline): each benchmark is one program.
 */
#ifndef SLIMLINK_BENCH_OPTIONS_H
#define SLIMLINK_BENCH_OPTIONS_H

#ifdef __cplusplus

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "base/parse.h"

namespace bench {

// The value `v` given to option `name`, an integer in [min, max]; else the
// error that names the option and its range, for CLI11 to print.
inline std::int64_t integer_value(const std::string& name, const std::string& v, std::int64_t min,
                                  std::int64_t max)
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
CLI::Option *add_integer(CLI::App& app, const std::string& name, T& out, std::int64_t min,
                         std::int64_t max, const std::string& text)
{
    const auto set = [&out, name, min, max](const std::string& v) {
        out = static_cast<T>(integer_value(name, v, min, max));
    };
    return app
            .add_option_function<std::string>(name, set,
                                              range_text(text, min, max) + " (default " +
                                                      std::to_string(out) + ")")
            ->type_name("N")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// --name N, repeatable: each integer in [min, max] appended to `out`.
template <typename T>
CLI::Option *add_integers(CLI::App& app, const std::string& name, std::vector<T>& out,
                          std::int64_t min, std::int64_t max, const std::string& text)
{
    const auto add = [&out, name, min, max](const std::vector<std::string>& values) {
        for (const std::string& v : values) {
            out.push_back(static_cast<T>(integer_value(name, v, min, max)));
        }
    };
    return app.add_option_function<std::vector<std::string>>(name, add, range_text(text, min, max))
            ->type_name("N")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// Parses the command line. Returns -1 to go on, else the exit status: 0
// after printing --help, 2 (the benchmarks' usage error) after printing what
// was wrong.
inline int parse(CLI::App& app, int argc, char **argv)
{
    try {
        app.parse(argc, argv);
        return -1;
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::ParseError& e) {
        std::cerr << app.get_name() << ": " << e.what()
                  << "\nRun with --help for more information.\n";
        return 2;
    }
}

}  // namespace bench

#else /* C */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <slimlink.h>

/* All of `s` as a decimal long in [min, max]: 1 and *out set, else 0. */
static inline int bench_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno        = 0;
    const long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        return 0;
    }
    *out = v;
    return 1;
}

/* All of `s` as a decimal number in [0, 2^64 - 1] (no sign): 1 and *out
 * set, else 0. */
static inline int bench_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno                      = 0;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-') {
        return 0;
    }
    *out = v;
    return 1;
}

/* "truncate" or "round": 1 and *out set, else 0. */
static inline int bench_parse_round(const char *s, slim_round_t *out)
{
    if (strcmp(s, "truncate") == 0) {
        *out = SLIM_ROUND_TRUNCATE;
        return 1;
    }
    if (strcmp(s, "round") == 0) {
        *out = SLIM_ROUND_NEAREST;
        return 1;
    }
    return 0;
}

/* "yield" (0) or "block" (1), --wait of the mini-apps: 1 and *block set, else 0. */
static inline int bench_parse_wait(const char *s, int *block)
{
    if (strcmp(s, "yield") == 0 || strcmp(s, "block") == 0) {
        *block = s[0] == 'b';
        return 1;
    }
    return 0;
}

/* --help: the usage on rank 0, then every rank leaves MPI and exits 0. */
static inline __attribute__((noreturn)) void bench_help_exit(int rank, const char *usage_line,
                                                             const char *help_text)
{
    if (rank == 0) {
        printf("%s%s", usage_line, help_text);
    }
    MPI_Finalize();
    exit(0);
}

#endif /* __cplusplus */

#endif
