// SPDX-License-Identifier: BSD-3-Clause
// OTF2 archives as event streams (src/tools/otf2_trace.h): the sample archive
// of tests/replay/otf2_sample.h, written with the OTF2 writer API into a
// temporary directory, read back event by event; and every archive that
// must be refused, with the file named.
#include "tools/otf2_trace.h"

#include "../replay/otf2_sample.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using slim::predict::Event;
using slim::predict::TraceError;
using slim::tools::open_trace;
using slim::tools::read_otf2;

namespace {

namespace fs = std::filesystem;

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
public:
    TempDir()
    {
        static std::atomic<int> count{0};
        path_ = fs::temp_directory_path() /
                ("slim-test-otf2-" + std::to_string(::getpid()) + "-" + std::to_string(count++));
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempDir()
    {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    TempDir(const TempDir&)            = delete;
    TempDir& operator=(const TempDir&) = delete;

    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// The sample archive in a temporary directory; anchor() is its traces.otf2.
class SampleArchive {
public:
    explicit SampleArchive(bool hostile_names = false)
    {
        slim::test::write_otf2_sample(dir_.path().string(), hostile_names);
    }
    std::string anchor() const { return (dir_.path() / "traces.otf2").string(); }
    const fs::path& dir() const { return dir_.path(); }

private:
    TempDir dir_;
};

Event event(std::int64_t start, std::int64_t end, std::uint32_t id, std::uint64_t bytes)
{
    Event e;
    e.start_ns = start;
    e.end_ns   = end;
    e.id       = id;
    e.bytes    = bytes;
    return e;
}

std::string text(const Event& e)
{
    return "[" + std::to_string(e.start_ns) + ", " + std::to_string(e.end_ns) + "] id " +
           std::to_string(e.id) + ", " + std::to_string(e.bytes) + " bytes" +
           (e.packed_bytes != 0 ? ", packed " + std::to_string(e.packed_bytes) : "");
}

std::vector<std::string> texts(const std::vector<Event>& events)
{
    std::vector<std::string> out;
    for (const Event& e : events) {
        out.push_back(text(e));
    }
    return out;
}

// The message of the TraceError `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& f)
{
    try {
        f();
    } catch (const TraceError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("an OTF2 archive gives rank 0 one event per outermost MPI communication region", "[otf2]")
{
    const SampleArchive archive;
    const auto stream = read_otf2(archive.anchor(), "");
    CHECK(stream.location.id == 0);
    CHECK(stream.location.group == "MPI Rank 0");
    CHECK(stream.location.mpi);
    // Ticks of 0.4 ns after the global offset, rounded down (1003 ticks:
    // 401.2 ns). MPI_Comm_rank, "compute", the MPI_Wait nested in
    // MPI_Allreduce and the MPI_Test that completed nothing give none.
    const std::vector<Event> expected = {
            event(401, 800, 1, 4096),    // MPI_Send to 1
            event(2000, 2400, 1, 4096),  // MPI_Send to 1 again: same id
            event(2800, 3000, 2, 64),    // MPI_Send to 0: another peer
            event(3200, 3400, 3, 4096),  // MPI_Send to 1 on another communicator
            event(4000, 4400, 4, 16),    // MPI_Allreduce: 8 sent + 8 received
            event(4800, 4820, 5, 0),     // MPI_Irecv: no bytes yet
            event(5200, 5400, 6, 1024),  // MPI_Wait that received them
            event(5600, 5640, 7, 2048),  // MPI_Isend
            event(6000, 6008, 8, 0),     // MPI_Test that completed the isend
            event(8000, 8400, 1, 4096),  // MPI_Send to 1 a third time
    };
    CHECK(texts(stream.events) == texts(expected));
}

TEST_CASE("ids are equal for the same MPI call with the same partner, different otherwise",
          "[otf2]")
{
    const SampleArchive archive;
    const auto rank0 = read_otf2(archive.anchor(), "0").events;
    REQUIRE(rank0.size() == 10);
    SECTION("the same function to the same peer on the same communicator")
    {
        CHECK(rank0[0].id == rank0[1].id);
        CHECK(rank0[0].id == rank0[9].id);
    }
    SECTION("another peer, another communicator")
    {
        CHECK(rank0[2].id != rank0[0].id);
        CHECK(rank0[3].id != rank0[0].id);
        CHECK(rank0[3].id != rank0[2].id);
    }
    SECTION("a broadcast from another root")
    {
        const auto rank1 = read_otf2(archive.anchor(), "1").events;
        REQUIRE(rank1.size() == 5);
        CHECK(rank1[1].id == rank1[3].id);  // root 0, twice
        CHECK(rank1[2].id != rank1[1].id);  // root 1
    }
}

TEST_CASE("--location chooses another location; a region open at the end gives no event", "[otf2]")
{
    const SampleArchive archive;
    const auto stream = read_otf2(archive.anchor(), "1");
    CHECK(stream.location.id == 1);
    CHECK(stream.location.group == "MPI Rank 1");
    REQUIRE(stream.locations.size() == 2);
    CHECK(stream.locations[0].id == 0);  // by id, not in definition order
    const std::vector<Event> expected = {
            event(600, 800, 1, 4096),   // MPI_Recv from 0
            event(1200, 1400, 2, 256),  // MPI_Bcast, root 0: received
            event(1600, 1800, 3, 256),  // MPI_Bcast, root 1: sent
            event(2000, 2200, 2, 256),  // MPI_Bcast, root 0 again
            event(4000, 4400, 4, 16),   // MPI_Allreduce
    };
    CHECK(texts(stream.events) == texts(expected));
}

TEST_CASE("a location the archive does not have is refused with the list of its locations",
          "[otf2]")
{
    const SampleArchive archive;
    const std::string listed = "its locations (OTF2 location ids): 0 \"Master thread\" in "
                               "\"MPI Rank 0\" (MPI), 1 \"Master thread\" in \"MPI Rank 1\" "
                               "(MPI)";
    for (const char *wrong : {"7", "rank0", "-1", "99999999999999999999999"}) {
        INFO(wrong);
        CHECK(error_of([&] { read_otf2(archive.anchor(), wrong); }) ==
              archive.anchor() + ": --location '" + wrong +
                      "' is not a location of this archive; " + listed);
    }
}

TEST_CASE("names from the archive reach messages escaped, never as terminal escape sequences",
          "[otf2]")
{
    const SampleArchive hostile(true);
    const auto no_control_bytes = [](const std::string& msg) {
        for (const char c : msg) {
            const auto byte = static_cast<unsigned char>(c);
            if (byte < 0x20 || byte >= 0x7f) return false;
        }
        return true;
    };
    SECTION("location and location group names in the list of locations")
    {
        const std::string msg = error_of([&] { read_otf2(hostile.anchor(), "7"); });
        CHECK_THAT(msg, Contains("0 \"Master\\x1b[5m thread\\x1b]0;TITLE\\x07\" in "
                                 "\"MPI Rank 0\\x1b[41m\" (MPI)"));
        CHECK(no_control_bytes(msg));
    }
    SECTION("region names in a Leave that does not match the open region")
    {
        const std::string msg = error_of([&] { read_otf2(hostile.anchor(), "1"); });
        CHECK_THAT(msg, Contains("Leave of region 'MPI_Send\\x1b]0;PWNED-TITLE\\x07\\x1b[31m'"));
        CHECK_THAT(msg, Contains("while region 'MPI_Recv\\x1b[2J\\x1b[H' is open"));
        CHECK(no_control_bytes(msg));
    }
    SECTION("the --location text itself")
    {
        const std::string msg = error_of([&] { read_otf2(hostile.anchor(), "7\x1b[2J"); });
        CHECK_THAT(msg, Contains("--location '7\\x1b[2J' is not a location"));
        CHECK(no_control_bytes(msg));
    }
    SECTION("rank 0's events are read as from the usual archive")
    {
        CHECK(read_otf2(hostile.anchor(), "").events.size() ==
              read_otf2(SampleArchive().anchor(), "").events.size());
    }
}

TEST_CASE("a missing or malformed OTF2 archive is refused, naming the file", "[otf2]")
{
    const TempDir dir;
    SECTION("a missing anchor file")
    {
        const std::string missing = (dir.path() / "traces.otf2").string();
        CHECK(error_of([&] { read_otf2(missing, ""); }) ==
              missing + ": cannot open: No such file or directory");
    }
    SECTION("a directory")
    {
        const std::string d = (dir.path() / "run.otf2").string();
        fs::create_directory(d);
        CHECK_THAT(error_of([&] { read_otf2(d, ""); }), StartsWith(d + ": is a directory"));
    }
    SECTION("garbage in the anchor file")
    {
        const std::string garbage = (dir.path() / "traces.otf2").string();
        std::ofstream(garbage) << "this is not an OTF2 anchor file\n\x01\x02\x03";
        CHECK_THAT(error_of([&] { read_otf2(garbage, ""); }),
                   StartsWith(garbage + ": not a readable OTF2 archive anchor file"));
    }
    SECTION("a truncated anchor file")
    {
        const SampleArchive archive;
        const auto size = fs::file_size(archive.anchor());
        fs::resize_file(archive.anchor(), size / 2);
        CHECK_THAT(error_of([&] { read_otf2(archive.anchor(), ""); }),
                   StartsWith(archive.anchor() + ": "));
    }
    SECTION("an anchor file whose property count was damaged to 620 million")
    {
        // The fuzzer's input: libotf2 callocs 9.9 GB for it and walks the
        // array (44 s, 9.7 GB resident) unless reading is capped.
        const SampleArchive archive;
        std::vector<char> bytes(fs::file_size(archive.anchor()));
        std::fstream anchor(archive.anchor(), std::ios::in | std::ios::out | std::ios::binary);
        anchor.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        const std::size_t at = 0x3124 % bytes.size();
        anchor.seekp(static_cast<std::streamoff>(at));
        anchor.write("\x25\x01", 2);
        anchor.close();
        CHECK_THAT(error_of([&] { read_otf2(archive.anchor(), ""); }),
                   StartsWith(archive.anchor() + ": not a readable OTF2 archive anchor file") &&
                           Contains("the archive asks for more memory than 1024 MiB"));
        // The cap stayed in the child that read it: the next archive is read.
        CHECK(read_otf2(SampleArchive().anchor(), "").events.size() > 0);
    }
    SECTION("an archive without its definitions")
    {
        const SampleArchive archive;
        fs::remove(archive.dir() / "traces.def");
        CHECK_THAT(error_of([&] { read_otf2(archive.anchor(), ""); }),
                   StartsWith(archive.anchor() + ": cannot read the archive's definitions"));
    }
}

TEST_CASE("slim-replay opens .otf2 files as archives and anything else as a text trace", "[otf2]")
{
    const SampleArchive archive;
    SECTION("an archive: its events through TraceReader, named by the anchor file")
    {
        const auto reader = open_trace(archive.anchor(), "1");
        CHECK(reader->name() == archive.anchor());
        std::size_t n = 0;
        while (reader->next()) {
            ++n;
        }
        CHECK(n == 5);
    }
    SECTION("--location with a text trace is an error")
    {
        const std::string trace = (archive.dir() / "run.trace").string();
        std::ofstream(trace) << "0 10 1\n";
        CHECK(error_of([&] { open_trace(trace, "1"); }) ==
              trace + ": --location chooses a location of an OTF2 archive, and this is a text "
                      "trace (an OTF2 anchor file's name ends in .otf2)");
        CHECK(open_trace(trace, "")->next());
    }
}
