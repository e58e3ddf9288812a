/* SPDX-License-Identifier: BSD-3-Clause */
// What the exec backends of the link and of the CPU share about running a
// site's command: splitting its template into words (no shell), checking
// that the program is an executable file, and saying how it ended.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace slim::link::site_command {

// `text` split at blanks and tabs; no quoting (a template that needs it is
// refused or run under a shell by its backend).
std::vector<std::string> split_words(const std::string& text);

// One template word with each {key} replaced by its value in `values`
// into `out`; false (and `out` partial) on an unknown key or an unclosed
// brace.
bool substitute(const std::string& word,
                std::initializer_list<std::pair<std::string_view, std::string_view>> values,
                std::string& out);

// A regular file this process may execute.
bool executable_file(const std::string& path);

// "exited with status N", "was killed by signal N" or "ended abnormally",
// for a waitpid() status.
std::string describe_wait_status(int status);

}  // namespace slim::link::site_command
