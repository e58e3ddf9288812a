// SPDX-License-Identifier: BSD-3-Clause
// Output files (src/base/output_file.h): traces and reports in a shared
// directory are never written through a planted symbolic link or into
// another user's file, and new ones get the mode asked for.
#include "base/output_file.h"
#include "trace/trace.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using slim::base::ExistingFile;
using slim::base::open_output_file;
using slim::base::OutputFileError;

namespace {

struct TempDir {
    std::string path;
    TempDir()
    {
        char name[] = "/tmp/slim-output-XXXXXX";
        REQUIRE(mkdtemp(name) != nullptr);
        path = name;
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::string read_file(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("a new output file is created with the mode asked for, whatever the umask",
          "[output_file]")
{
    const TempDir dir;
    const mode_t old = umask(022);
    const int fd     = open_output_file(dir.path + "/rank0.trace", ExistingFile::truncate, 0600);
    umask(old);
    REQUIRE(fd >= 0);
    struct stat st {};
    REQUIRE(fstat(fd, &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
}

TEST_CASE("a planted symbolic link is refused and its target left untouched", "[output_file]")
{
    const TempDir dir;
    const std::string target = dir.path + "/victim";
    const std::string link   = dir.path + "/rank0.trace";
    write_file(target, "precious\n");
    REQUIRE(symlink(target.c_str(), link.c_str()) == 0);

    SECTION("a trace (truncating)")
    {
        CHECK_THROWS_WITH(open_output_file(link, ExistingFile::truncate, 0600),
                          Catch::Contains("symbolic link"));
        CHECK_THROWS_WITH(slim::predict::TraceWriter(link), Catch::Contains("symbolic link"));
    }
    SECTION("a report (appending)")
    {
        CHECK_THROWS_AS(open_output_file(link, ExistingFile::append, 0644), OutputFileError);
    }
    SECTION("a dangling link (the target does not exist yet)")
    {
        const std::string dangling = dir.path + "/r1.trace";
        REQUIRE(symlink((dir.path + "/nothing").c_str(), dangling.c_str()) == 0);
        CHECK_THROWS_AS(open_output_file(dangling, ExistingFile::truncate, 0600), OutputFileError);
        struct stat st {};
        CHECK(stat((dir.path + "/nothing").c_str(), &st) == -1);  // not created through it
    }
    CHECK(read_file(target) == "precious\n");
}

TEST_CASE("an existing file of this user is truncated for a trace and appended for a report",
          "[output_file]")
{
    const TempDir dir;
    const std::string path = dir.path + "/f";
    write_file(path, "old\n");
    {
        const int fd = open_output_file(path, ExistingFile::append, 0644);
        REQUIRE(write(fd, "new\n", 4) == 4);
        close(fd);
    }
    CHECK(read_file(path) == "old\nnew\n");
    {
        const int fd = open_output_file(path, ExistingFile::truncate, 0600);
        REQUIRE(write(fd, "x\n", 2) == 2);
        close(fd);
    }
    CHECK(read_file(path) == "x\n");
}

TEST_CASE("a directory, a missing directory and another user's file are refused, saying why",
          "[output_file]")
{
    const TempDir dir;
    CHECK_THROWS_WITH(open_output_file(dir.path, ExistingFile::truncate, 0600),
                      Catch::Contains("not a regular file") || Catch::Contains("Is a directory"));
    CHECK_THROWS_WITH(open_output_file(dir.path + "/no/such/file", ExistingFile::truncate, 0600),
                      Catch::Contains("No such file or directory"));
    if (geteuid() == 0) {
        const std::string path = dir.path + "/theirs";
        write_file(path, "theirs\n");
        REQUIRE(chown(path.c_str(), 12345, 12345) == 0);
        CHECK_THROWS_WITH(open_output_file(path, ExistingFile::append, 0644),
                          Catch::Contains("owned by uid 12345"));
        CHECK(read_file(path) == "theirs\n");
    } else {
        WARN("skipped another user's file: needs root to chown");
    }
}

TEST_CASE("a planted FIFO is refused at once, with or without a reader, and never truncated",
          "[output_file]")
{
    const TempDir dir;
    const std::string fifo = dir.path + "/rank0.trace";
    REQUIRE(mkfifo(fifo.c_str(), 0666) == 0);
    // Without a reader a blocking open would wait forever; this must return.
    SECTION("no reader")
    {
        CHECK_THROWS_WITH(open_output_file(fifo, ExistingFile::truncate, 0600),
                          Catch::Contains("rank0.trace: exists and is not a regular file"));
        CHECK_THROWS_WITH(open_output_file(fifo, ExistingFile::append, 0644),
                          Catch::Contains("not a regular file"));
        CHECK_THROWS_WITH(slim::predict::TraceWriter(fifo), Catch::Contains("not a regular file"));
    }
    SECTION("a reader holds it open")
    {
        const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
        REQUIRE(reader >= 0);
        CHECK_THROWS_WITH(open_output_file(fifo, ExistingFile::truncate, 0600),
                          Catch::Contains("not a regular file"));
        char byte = 0;
        CHECK(read(reader, &byte, 1) <= 0);  // nothing was written into it
        close(reader);
    }
    struct stat st {};
    REQUIRE(lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("an opened output file blocks on writes again and an existing one is truncated only "
          "after the checks",
          "[output_file]")
{
    const TempDir dir;
    const std::string path = dir.path + "/f";
    write_file(path, "old\n");
    const int fd = open_output_file(path, ExistingFile::truncate, 0600);
    REQUIRE(fd >= 0);
    CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);
    close(fd);
    const int fresh = open_output_file(dir.path + "/g", ExistingFile::append, 0644);
    REQUIRE(fresh >= 0);
    CHECK((fcntl(fresh, F_GETFL) & O_NONBLOCK) == 0);
    close(fresh);
}

TEST_CASE("a hard link to one of this user's files is refused and the file left whole",
          "[output_file]")
{
    const TempDir dir;
    const std::string precious = dir.path + "/precious";
    const std::string link     = dir.path + "/rank0.trace";
    write_file(precious, "precious\n");
    REQUIRE(::link(precious.c_str(), link.c_str()) == 0);
    CHECK_THROWS_WITH(open_output_file(link, ExistingFile::truncate, 0600),
                      Catch::Contains("rank0.trace: exists with 2 hard links"));
    CHECK_THROWS_AS(open_output_file(link, ExistingFile::append, 0644), OutputFileError);
    CHECK(read_file(precious) == "precious\n");
}
