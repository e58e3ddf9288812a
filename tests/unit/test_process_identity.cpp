#include "log.h"
#include "process_identity.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include <unistd.h>

namespace {

slim::EnvLookup lookup_in(std::map<std::string, std::string> env)
{
    return [env](const char *name) -> std::optional<std::string> {
        const auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
}

} // namespace

TEST_CASE("the rank comes from the first launcher variable that is set")
{
    CHECK(slim::detect_rank(lookup_in({})) == -1);
    CHECK(slim::detect_rank(lookup_in({{"PMI_RANK", "3"}})) == 3);
    CHECK(slim::detect_rank(lookup_in({{"OMPI_COMM_WORLD_RANK", "5"}})) == 5);
    CHECK(slim::detect_rank(lookup_in({{"PMIX_RANK", "7"}})) == 7);
    CHECK(slim::detect_rank(lookup_in({{"SLURM_PROCID", "0"}})) == 0);
    CHECK(slim::detect_rank(lookup_in({{"SLURM_PROCID", "9"}, {"PMI_RANK", "2"}})) == 2);
    CHECK(slim::detect_rank(lookup_in({{"PMIX_RANK", "4"}, {"OMPI_COMM_WORLD_RANK", "1"}})) == 1);
}

TEST_CASE("malformed rank variables are skipped")
{
    CHECK(slim::detect_rank(lookup_in({{"PMI_RANK", ""}, {"PMIX_RANK", "6"}})) == 6);
    CHECK(slim::detect_rank(lookup_in({{"PMI_RANK", "x"}})) == -1);
    CHECK(slim::detect_rank(lookup_in({{"PMI_RANK", "-2"}})) == -1);
    CHECK(slim::detect_rank(lookup_in({{"PMI_RANK", "3 "}})) == -1);
    CHECK(slim::detect_rank(lookup_in({{"PMI_RANK", "99999999999"}})) == -1);
}

TEST_CASE("a process is labelled by rank, or by pid when the rank is unknown")
{
    slim::ProcessIdentity who;
    who.pid  = 1234;
    who.rank = 3;
    CHECK(who.label() == "r3");
    who.rank = -1;
    CHECK(who.label() == "pid1234");
}

TEST_CASE("the process identity has the real pid and a host name")
{
    const slim::ProcessIdentity who = slim::make_process_identity(lookup_in({{"PMI_RANK", "1"}}));
    CHECK(who.rank == 1);
    CHECK(who.pid == static_cast<long>(::getpid()));
    CHECK(!who.host.empty());
}

TEST_CASE("log lines start with the slim tag and the process label")
{
    CHECK(slim::log_pattern("r3") == "[slim r3] %l: %v");
    CHECK(slim::logger().name() == "slim");
}
