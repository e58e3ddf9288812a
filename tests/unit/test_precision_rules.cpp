// SPDX-License-Identifier: BSD-3-Clause
// UCX_SLIM_POLICY: every accepted rule form, and every malformed one rejected
// with a message naming the offending token and the accepted forms.
#include "precision/precision_rules.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

using Catch::Matchers::Contains;
using slim::pack::Precision;
using slim::pack::Rounding;
using slim::precision::PrecisionRules;
using slim::precision::PrecisionRulesError;

namespace {

// The PrecisionRulesError message for `spec`, or "" when it parses.
std::string error_for(const std::string& spec)
{
    try {
        PrecisionRules::parse(spec);
    } catch (const PrecisionRulesError& e) {
        return e.what();
    }
    return "";
}

void check_rejected(const std::string& spec, const std::string& token, const std::string& why)
{
    INFO("spec: " << spec);
    const std::string msg = error_for(spec);
    CHECK_THAT(msg, Contains("UCX_SLIM_POLICY: '" + token + "': " + why));
    CHECK_THAT(msg, Contains("accepted forms: LABEL=off, LABEL=keep:N[:truncate|round], "
                             "LABEL=rel:EPS[:truncate|round], LABEL is [A-Za-z0-9_.-]+ or *"));
}

bool packs_as(const PrecisionRules& policy, const std::string& label, int keep, Rounding mode)
{
    const std::optional<Precision> p = policy.lookup(label);
    return p && p->keep_bytes == keep && p->mode == mode;
}

class TempFile {
public:
    explicit TempFile(const std::string& text)
    {
        char name[]  = "/tmp/slim-policy-XXXXXX";
        const int fd = ::mkstemp(name);
        REQUIRE(fd >= 0);
        ::close(fd);
        path_ = name;
        std::ofstream(path_) << text;
    }
    ~TempFile() { std::remove(path_.c_str()); }
    TempFile(const TempFile&)            = delete;
    TempFile& operator=(const TempFile&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

}  // namespace

TEST_CASE("an empty policy packs nothing", "[precision]")
{
    for (const char *spec : {"", "  ", ";"}) {
        const PrecisionRules p = PrecisionRules::parse(spec);
        CHECK_FALSE(p.lossy());
        CHECK_FALSE(p.lookup("halo"));
    }
    CHECK_FALSE(PrecisionRules{}.lossy());
    CHECK_FALSE(PrecisionRules{}.lookup("halo"));
}

TEST_CASE("keep rules take N 2..7 and an optional mode, truncate by default", "[precision]")
{
    const PrecisionRules p = PrecisionRules::parse("a=keep:2;b=keep:7:round;c=keep:4:truncate");
    CHECK(p.lossy());
    CHECK(packs_as(p, "a", 2, Rounding::truncate));
    CHECK(packs_as(p, "b", 7, Rounding::nearest_even));
    CHECK(packs_as(p, "c", 4, Rounding::truncate));
    CHECK_FALSE(p.lookup("d"));  // no rule, no '*'
}

TEST_CASE("off rules and the '*' default decide labels without their own rule", "[precision]")
{
    const PrecisionRules p =
            PrecisionRules::parse("halo=keep:4:round;fft=rel:1e-6;ghost=off;*=keep:3");
    CHECK(packs_as(p, "halo", 4, Rounding::nearest_even));
    CHECK(packs_as(p, "other", 3, Rounding::truncate));
    CHECK_FALSE(p.lookup("ghost"));  // its own off beats '*'

    const PrecisionRules off_default = PrecisionRules::parse("*=off;halo=keep:5");
    CHECK(packs_as(off_default, "halo", 5, Rounding::truncate));
    CHECK_FALSE(off_default.lookup("other"));
    CHECK_FALSE(PrecisionRules::parse("*=off;x=off").lossy());
}

TEST_CASE("rel rules pick the smallest keep whose bound meets the epsilon", "[precision]")
{
    // truncate bound 2^-(8k-12): k=2 6.25e-2, k=3 2.4e-4, k=4 9.5e-7, k=5 3.7e-9,
    // k=6 1.5e-11, k=7 5.7e-14; round bound is half of that.
    const PrecisionRules p =
            PrecisionRules::parse("a=rel:1e-3;b=rel:0.25;c=rel:1e-6;d=rel:1e-6:round;"
                                  "e=rel:0.0625;f=rel:0.03125:round;g=rel:6e-14;"
                                  "h=rel:3e-14:round;i=rel:0.06:round");
    CHECK(packs_as(p, "a", 3, Rounding::truncate));
    CHECK(packs_as(p, "b", 2, Rounding::truncate));
    CHECK(packs_as(p, "c", 4, Rounding::truncate));
    CHECK(packs_as(p, "d", 4, Rounding::nearest_even));
    CHECK(packs_as(p, "e", 2, Rounding::truncate));      // bound exactly met
    CHECK(packs_as(p, "f", 2, Rounding::nearest_even));  // bound exactly met
    CHECK(packs_as(p, "g", 7, Rounding::truncate));
    CHECK(packs_as(p, "h", 7, Rounding::nearest_even));
    CHECK(packs_as(p, "i", 2, Rounding::nearest_even));
    CHECK(slim::precision::keep_for_bound(1e-9, Rounding::truncate) == 6);
    CHECK(slim::precision::keep_for_bound(4e-9, Rounding::truncate) == 5);
}

TEST_CASE("labels may use letters, digits, '_', '.' and '-'; blanks around rules are ignored",
          "[precision]")
{
    const PrecisionRules p = PrecisionRules::parse(" Halo_2.x-y = keep:3 ; fft=off; ");
    CHECK(packs_as(p, "Halo_2.x-y", 3, Rounding::truncate));
    CHECK_FALSE(p.lookup("halo_2.x-y"));  // labels are case-sensitive
}

TEST_CASE("malformed rules are rejected naming the rule and the reason", "[precision]")
{
    check_rejected("halo=keep:9", "halo=keep:9", "keep must be 2..7");
    check_rejected("halo=keep:1", "halo=keep:1", "keep must be 2..7");
    check_rejected("halo=keep:", "halo=keep:", "keep must be 2..7");
    check_rejected("halo=keep:4x", "halo=keep:4x", "keep must be 2..7");
    check_rejected("halo=keep", "halo=keep", "keep takes a value and an optional mode");
    check_rejected("halo=keep:4:round:x", "halo=keep:4:round:x",
                   "keep takes a value and an optional mode");
    check_rejected("halo=keep:4:nearest", "halo=keep:4:nearest",
                   "mode must be truncate or round, not 'nearest'");
    check_rejected("halo=rel:0", "halo=rel:0", "rel bound must be a number in (0, 0.25]");
    check_rejected("halo=rel:-1e-3", "halo=rel:-1e-3", "rel bound must be a number in (0, 0.25]");
    check_rejected("halo=rel:0.3", "halo=rel:0.3", "rel bound must be a number in (0, 0.25]");
    check_rejected("halo=rel:abc", "halo=rel:abc", "rel bound must be a number in (0, 0.25]");
    check_rejected("halo=rel:inf", "halo=rel:inf", "rel bound must be a number in (0, 0.25]");
    check_rejected("halo=rel:1e-3:up", "halo=rel:1e-3:up",
                   "mode must be truncate or round, not 'up'");
    check_rejected("halo=rel:1e-15", "halo=rel:1e-15",
                   "rel bound too strict: even keep 7 only guarantees 5.68434e-14");
    check_rejected("halo=rel:2e-14:round", "halo=rel:2e-14:round",
                   "rel bound too strict: even keep 7 only guarantees 2.84217e-14");
    check_rejected("halo", "halo", "missing '='");
    check_rejected("fft=off;halo", "halo", "missing '='");
    check_rejected("=keep:4", "=keep:4", "empty label");
    check_rejected("hal o=keep:4", "hal o=keep:4", "label must be [A-Za-z0-9_.-]+ or *");
    check_rejected("ha/lo=off", "ha/lo=off", "label must be [A-Za-z0-9_.-]+ or *");
    check_rejected("**=off", "**=off", "label must be [A-Za-z0-9_.-]+ or *");
    check_rejected("halo=keep:4;halo=off", "halo=off", "duplicate label 'halo'");
    check_rejected("*=off;*=keep:3", "*=keep:3", "duplicate label '*'");
    check_rejected("halo=fast", "halo=fast", "unknown kind 'fast' (use off, keep or rel)");
    check_rejected("halo=", "halo=", "unknown kind '' (use off, keep or rel)");
    check_rejected("halo=off:3", "halo=off:3", "off takes no arguments");
}

TEST_CASE("a trailing or doubled ';' is allowed", "[precision]")
{
    CHECK(packs_as(PrecisionRules::parse("halo=keep:4;"), "halo", 4, Rounding::truncate));
    CHECK(packs_as(PrecisionRules::parse("halo=keep:4;;fft=keep:5"), "fft", 5, Rounding::truncate));
}

TEST_CASE("@file reads one rule per line with comments and blank lines", "[precision]")
{
    const TempFile file("# packing for the halo exchange\n"
                        "\n"
                        "halo = keep:4:round   # measured: 1e-7 is enough\n"
                        "   fft=rel:1e-6\r\n"
                        "*=off\n");
    const PrecisionRules p = PrecisionRules::parse("@" + file.path());
    CHECK(packs_as(p, "halo", 4, Rounding::nearest_even));
    CHECK(packs_as(p, "fft", 4, Rounding::truncate));
    CHECK_FALSE(p.lookup("other"));
    CHECK(PrecisionRules::parse(" @" + file.path() + " ").lossy());
}

TEST_CASE("@file errors name the file and line of the bad rule", "[precision]")
{
    SECTION("a bad line")
    {
        const TempFile file("halo=keep:4\n# fine\n\nfft=keep:9\n");
        const std::string msg = error_for("@" + file.path());
        CHECK_THAT(msg, Contains("UCX_SLIM_POLICY: " + file.path() +
                                 ":4: 'fft=keep:9': keep must be 2..7; accepted forms:"));
    }
    SECTION("a duplicate across lines")
    {
        const TempFile file("halo=keep:4\nhalo=keep:5\n");
        const std::string msg = error_for("@" + file.path());
        CHECK_THAT(msg, Contains(file.path() + ":2: 'halo=keep:5': duplicate label 'halo'"));
    }
    SECTION("several rules on one line are one bad rule")
    {
        const TempFile file("halo=keep:4;fft=off\n");
        CHECK_THAT(error_for("@" + file.path()),
                   Contains(file.path() + ":1: 'halo=keep:4;fft=off': keep must be 2..7"));
    }
    SECTION("a missing file")
    {
        const std::string msg = error_for("@/nonexistent/slim-policy");
        CHECK_THAT(msg, Contains("UCX_SLIM_POLICY: '@/nonexistent/slim-policy': cannot open "
                                 "/nonexistent/slim-policy: No such file or directory"));
    }
    SECTION("a directory is not a readable policy")
    {
        CHECK_THAT(error_for("@/tmp"), Contains("UCX_SLIM_POLICY: '@/tmp': cannot read /tmp"));
    }
    SECTION("a device is refused before it is read (it may never end)")
    {
        CHECK_THAT(error_for("@/dev/zero"),
                   Contains("UCX_SLIM_POLICY: '@/dev/zero': /dev/zero is not a regular file"));
    }
    SECTION("a FIFO is refused at once, not waited on for a writer")
    {
        char dir[] = "/tmp/slim-policy-fifo-XXXXXX";
        REQUIRE(::mkdtemp(dir) != nullptr);
        const std::string fifo = std::string(dir) + "/policy.fifo";
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        const std::string msg = error_for("@" + fifo);
        ::unlink(fifo.c_str());
        ::rmdir(dir);
        CHECK_THAT(msg, Contains("UCX_SLIM_POLICY: '@" + fifo + "': " + fifo +
                                 " is not a regular file (a FIFO)"));
    }
    SECTION("a file over 1 MiB is refused")
    {
        const TempFile file(std::string(std::size_t{1} << 20, '#') + "\nhalo=keep:4\n");
        CHECK_THAT(error_for("@" + file.path()),
                   Contains("a policy file may have at most 1048576 (1 MiB)"));
    }
    SECTION("an unreadable file")
    {
        const TempFile file("halo=keep:4\n");
        REQUIRE(::chmod(file.path().c_str(), 0) == 0);
        if (::access(file.path().c_str(), R_OK) == 0) {
            WARN("running as root: permissions are not enforced, case skipped");
        } else {
            CHECK_THAT(error_for("@" + file.path()),
                       Contains("cannot open " + file.path() + ": Permission denied"));
        }
    }
    SECTION("'@' without a path")
    {
        CHECK_THAT(error_for("@"),
                   Contains("UCX_SLIM_POLICY: '@': '@' must be followed by a file path"));
    }
}
