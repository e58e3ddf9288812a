// SPDX-License-Identifier: BSD-3-Clause
#include "tools/help_formatter.h"

#include <algorithm>

namespace slim::tools {

namespace {

constexpr std::size_t help_width  = 80;
constexpr std::size_t help_column = 23;

}  // namespace


std::string wrap(const std::string& text, std::size_t width)
{
    std::string out;
    std::size_t line = 0;  // characters on the current line
    std::size_t at   = 0;
    while (at < text.size()) {
        if (text[at] == '\n') {
            out.push_back('\n');
            line = 0;
            ++at;
            continue;
        }
        if (text[at] == ' ') {
            ++at;
            continue;
        }
        const std::size_t end  = std::min(text.find_first_of(" \n", at), text.size());
        const std::string word = text.substr(at, end - at);
        if (line > 0 && line + 1 + word.size() > width) {
            out.push_back('\n');
            line = 0;
        }
        if (line > 0) {
            out.push_back(' ');
            ++line;
        }
        out.append(word);
        line += word.size();
        at = end;
    }
    return out;
}

HelpFormatter::HelpFormatter() { column_width(help_column); }

std::string HelpFormatter::make_help(const CLI::App *app, std::string name,
                                     CLI::AppFormatMode mode) const
{
    return make_usage(app, name) + "\n" + wrap(app->get_description(), help_width) + "\n" +
           make_groups(app, mode) + "\n" + wrap(app->get_footer(), help_width) + "\n";
}

std::string HelpFormatter::make_usage(const CLI::App *app, std::string name) const
{
    const std::string head = "usage: " + name;
    const std::string indent(head.size(), ' ');
    std::string out  = head;
    std::size_t line = head.size();
    const auto add   = [&](const std::string  &item) {
        if (line + 1 + item.size() > help_width) {
            out.append("\n").append(indent);
            line = indent.size();
        }
        out.append(" ").append(item);
        line += 1 + item.size();
    };
    for (const CLI::Option *opt : app->get_options()) {
        if (opt == app->get_help_ptr() || !opt->nonpositional()) {
            continue;
        }
        std::string item = opt->get_name(false, false) + make_option_opts(opt);
        add(opt->get_required() ? item : "[" + item + "]");
    }
    // Then the arguments (FILE..., for one taken several times), and a
    // tool with commands (slimlink-report) says where the command goes.
    for (const CLI::Option *opt : app->get_options()) {
        if (opt->nonpositional()) {
            continue;
        }
        std::string item = opt->get_type_name() + (opt->get_items_expected_max() > 1 ? "..." : "");
        add(opt->get_required() ? item : "[" + item + "]");
    }
    if (!app->get_subcommands({}).empty()) {
        add("COMMAND ...");
    }
    return out + "\n";
}

std::string HelpFormatter::make_option_opts(const CLI::Option *opt) const
{
    // A flag has no type name.
    return opt->get_type_name().empty() ? std::string() : " " + opt->get_type_name();
}

std::string HelpFormatter::make_option_desc(const CLI::Option *opt) const
{
    return wrap(opt->get_description(), help_width - help_column);
}

}  // namespace slim::tools
