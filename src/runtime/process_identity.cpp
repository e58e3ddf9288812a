#include "process_identity.h"

#include "no_destructor.h"

#include <array>
#include <charconv>
#include <climits>

#include <unistd.h>

namespace slim {

int detect_rank(const EnvLookup &lookup)
{
    for (const char *var : rank_variables) {
        const std::optional<std::string> value = lookup(var);
        if (!value || value->empty()) {
            continue;
        }
        int         rank  = -1;
        const char *first = value->data();
        const char *last  = first + value->size();
        const auto [end, ec] = std::from_chars(first, last, rank);
        if (ec == std::errc{} && end == last && rank >= 0) {
            return rank;
        }
    }
    return -1;
}

std::string ProcessIdentity::label() const
{
    return rank >= 0 ? "r" + std::to_string(rank) : "pid" + std::to_string(pid);
}

ProcessIdentity make_process_identity(const EnvLookup &lookup)
{
    ProcessIdentity id;
    id.rank = detect_rank(lookup);
    id.pid  = static_cast<long>(::getpid());
    std::array<char, HOST_NAME_MAX + 1> host{};
    if (::gethostname(host.data(), host.size() - 1) == 0) {
        id.host = host.data();
    } else {
        id.host = "unknown";
    }
    return id;
}

const ProcessIdentity &this_process()
{
    static NoDestructor<ProcessIdentity> identity{make_process_identity(process_environment())};
    return *identity;
}

} // namespace slim
