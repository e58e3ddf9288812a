// SPDX-License-Identifier: BSD-3-Clause
#include "base/log.h"
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

}  // namespace

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

namespace {

slim::HydraProxyLookup proxy(std::optional<std::string> key)
{
    return [key] { return key; };
}

}  // namespace

TEST_CASE("hydra's local rank and size come with the proxy as the job key")
{
    const slim::LocalJob job = slim::detect_local_job(
            lookup_in({{"PMI_RANK", "5"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "3"}}),
            proxy("4242-987654"));
    CHECK(job.known());
    CHECK(job.local_rank == 1);
    CHECK(job.local_size == 3);
    CHECK(job.launcher == "hydra");
    CHECK(job.key == "hydra-4242-987654");
}

TEST_CASE("hydra ranks without a hydra_pmi_proxy ancestor have no local job")
{
    const auto env = lookup_in({{"MPI_LOCALRANKID", "0"},
                                {"MPI_LOCALNRANKS", "2"},
                                {"SLURM_LOCALID", "0"},
                                {"SLURM_JOB_ID", "7"},
                                {"SLURM_STEP_ID", "0"},
                                {"SLURM_NODEID", "0"},
                                {"SLURM_TASKS_PER_NODE", "2"}});
    // Not Slurm's either: under hydra SLURM_LOCALID is the proxy's, not the rank's.
    CHECK(!slim::detect_local_job(env, proxy(std::nullopt)).known());
}

TEST_CASE("Open MPI's local rank comes with the PMIx namespace or the job id as the key")
{
    SECTION("PMIx namespace first")
    {
        const slim::LocalJob job =
                slim::detect_local_job(lookup_in({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                                  {"PMIX_NAMESPACE", "prterun-vm-123@1"},
                                                  {"OMPI_MCA_ess_base_jobid", "44433409"}}),
                                       proxy("unused"));
        CHECK(job.known());
        CHECK(job.local_size == 4);
        CHECK(job.key == "openmpi-prterun-vm-123@1");
    }
    SECTION("Open MPI 4 job id")
    {
        const slim::LocalJob job =
                slim::detect_local_job(lookup_in({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                                  {"OMPI_MCA_ess_base_jobid", "44433409"}}),
                                       proxy(std::nullopt));
        CHECK(job.local_rank == 3);
        CHECK(job.key == "openmpi-44433409");
    }
    SECTION("no job id: unknown")
    {
        CHECK(!slim::detect_local_job(lookup_in({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}),
                                      proxy(std::nullopt))
                       .known());
    }
}

TEST_CASE("Slurm's local size is this node's entry of the tasks-per-node list")
{
    const auto slurm = [](const char *node, const char *per_node) {
        return slim::detect_local_job(lookup_in({{"SLURM_LOCALID", "1"},
                                                 {"SLURM_JOB_ID", "812"},
                                                 {"SLURM_STEP_ID", "3"},
                                                 {"SLURM_NODEID", node},
                                                 {"SLURM_STEP_TASKS_PER_NODE", per_node},
                                                 {"SLURM_TASKS_PER_NODE", "99"}}),
                                      proxy(std::nullopt));
    };
    const slim::LocalJob job = slurm("3", "2(x3),4");
    CHECK(job.known());
    CHECK(job.local_rank == 1);
    CHECK(job.local_size == 4);
    CHECK(job.key == "slurm-812.3");
    CHECK(slurm("2", "2(x3),4").local_size == 2);
    CHECK(!slurm("4", "2(x3),4").known());  // no such node
    CHECK(!slurm("0", "1").known());        // local rank 1 of 1
}

TEST_CASE("Slurm tasks-per-node lists are parsed strictly")
{
    CHECK(slim::slurm_tasks_on_node("16", 0) == 16);
    CHECK(slim::slurm_tasks_on_node("2(x3),1", 0) == 2);
    CHECK(slim::slurm_tasks_on_node("2(x3),1", 2) == 2);
    CHECK(slim::slurm_tasks_on_node("2(x3),1", 3) == 1);
    CHECK(slim::slurm_tasks_on_node("2(x3),1", 4) == -1);
    CHECK(slim::slurm_tasks_on_node("", 0) == -1);
    CHECK(slim::slurm_tasks_on_node("2(3)", 0) == -1);
    CHECK(slim::slurm_tasks_on_node("2(x0)", 0) == -1);
    CHECK(slim::slurm_tasks_on_node("x,2", 1) == -1);
}

TEST_CASE("malformed or inconsistent local ranks leave the local job unknown")
{
    const auto hydra = [](const char *id, const char *n) {
        return slim::detect_local_job(lookup_in({{"MPI_LOCALRANKID", id}, {"MPI_LOCALNRANKS", n}}),
                                      proxy("1-2"));
    };
    CHECK(hydra("0", "1").known());
    CHECK(!hydra("1", "1").known());
    CHECK(!hydra("-1", "2").known());
    CHECK(!hydra("0", "0").known());
    CHECK(!hydra("x", "2").known());
    CHECK(!slim::detect_local_job(lookup_in({}), proxy("1-2")).known());
}

TEST_CASE("outside hydra this process has no hydra_pmi_proxy ancestor")
{
    // The unit tests are not started by mpiexec.
    CHECK(!slim::hydra_proxy_of_this_process()());
}
