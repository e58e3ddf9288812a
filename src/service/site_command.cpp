// SPDX-License-Identifier: BSD-3-Clause
#include "service/site_command.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace slim::link::site_command {

std::vector<std::string> split_words(const std::string& text)
{
    std::vector<std::string> words;
    std::string word;
    for (const char c : text) {
        if (c == ' ' || c == '\t') {
            if (!word.empty()) {
                words.push_back(word);
                word.clear();
            }
        } else {
            word.push_back(c);
        }
    }
    if (!word.empty()) {
        words.push_back(word);
    }
    return words;
}

bool substitute(const std::string& word,
                std::initializer_list<std::pair<std::string_view, std::string_view>> values,
                std::string& out)
{
    out.clear();
    for (std::size_t i = 0; i < word.size();) {
        if (word[i] != '{') {
            out.push_back(word[i++]);
            continue;
        }
        const std::size_t close = word.find('}', i);
        if (close == std::string::npos) {
            return false;
        }
        const std::string_view key(word.data() + i + 1, close - i - 1);
        bool known = false;
        for (const auto& [name, value] : values) {
            if (key == name) {
                out.append(value);
                known = true;
                break;
            }
        }
        if (!known) {
            return false;
        }
        i = close + 1;
    }
    return true;
}

bool executable_file(const std::string& path)
{
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
}

std::string describe_wait_status(int status)
{
    if (WIFEXITED(status)) {
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
        return "was killed by signal " + std::to_string(WTERMSIG(status));
    }
    return "ended abnormally";
}

}  // namespace slim::link::site_command
