// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for slim-replay's OTF2 reader (src/tools/otf2_trace.h),
// built with clang++ -fsanitize=fuzzer,address by tests/fuzz/local.mk.
// Archives come from other machines and other people. At start-up it writes
// the test archive of tests/replay/otf2_sample.h twice (as is, and with
// terminal escape sequences in its names); each input damages one file of
// one of them:
//   byte 0: which archive (bit 7) and which of its files (the rest);
//   byte 1: 0-127 the rest of the input overwrites the file at offset
//           bytes 2-3 (little-endian, modulo its size; the file grows as
//           needed); 128-255 the rest of the input replaces the file.
// libotf2 runs in this process (read_otf2_here), as the fuzzer needs its
// coverage; slim-replay runs it in a child process (read_otf2).
// Properties, reading rank 0 (the default location) and location 1:
// - read_otf2_here() either returns or throws a TraceError naming the anchor
//   file, whose message holds only printable ASCII (names from the archive
//   never reach the terminal raw) and is of bounded length;
// - its events, read by TraceReader under the text format's rules, either
//   all pass or stop at a TraceError of the same kind.
#include "trace/trace.h"
#include "tools/otf2_trace.h"
#include "../replay/otf2_sample.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <stdlib.h>

namespace {

namespace fs = std::filesystem;

struct File {
    std::string relative;  // inside the archive's directory
    std::vector<char> bytes;
};

std::vector<File> archives[2];  // as is, hostile names
std::string work;               // where a damaged copy is written

void check(bool ok)
{
    if (!ok) std::abort();
}

std::vector<File> load(const fs::path& dir)
{
    std::vector<File> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (!entry.is_regular_file()) continue;
        std::ifstream in(entry.path(), std::ios::binary);
        files.push_back({fs::relative(entry.path(), dir).string(),
                         std::vector<char>(std::istreambuf_iterator<char>(in), {})});
    }
    std::sort(files.begin(), files.end(),
              [](const File& a, const File& b) { return a.relative < b.relative; });
    return files;
}

void check_message(const slim::predict::TraceError& e, const std::string& anchor)
{
    const std::string what = e.what();
    check(what.compare(0, anchor.size() + 1, anchor + ":") == 0);
    // 16 listed locations with two names of up to 200 bytes, escaped.
    check(what.size() < 64 * 1024);
    for (const char c : what) {
        const auto byte = static_cast<unsigned char>(c);
        check(byte >= 0x20 && byte < 0x7f);
    }
}

void read(const std::string& anchor, const std::string& location)
{
    try {
        auto stream = slim::tools::read_otf2_here(anchor, location, 0);
        slim::predict::TraceReader reader(std::move(stream.events), anchor);
        while (reader.next()) {}
    } catch (const slim::predict::TraceError& e) {
        check_message(e, anchor);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    std::string base = "/tmp/slim-otf2-fuzz.XXXXXX";
    check(mkdtemp(base.data()) != nullptr);
    slim::test::write_otf2_sample(base + "/sample", false);
    slim::test::write_otf2_sample(base + "/hostile", true);
    archives[0] = load(base + "/sample");
    archives[1] = load(base + "/hostile");
    check(!archives[0].empty() && archives[0].size() == archives[1].size());
    work                            = base + "/work";
    static const std::string remove = base;
    std::atexit([] {
        std::error_code ec;
        fs::remove_all(remove, ec);
    });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    if (size < 4) return 0;
    const std::vector<File>& archive = archives[data[0] >> 7];
    const std::size_t damaged        = (data[0] & 0x7f) % archive.size();
    fs::remove_all(work);
    for (std::size_t i = 0; i < archive.size(); ++i) {
        std::vector<char> bytes = archive[i].bytes;
        if (i == damaged) {
            const char *const rest = reinterpret_cast<const char *>(data + 4);
            const std::size_t n    = size - 4;
            if (data[1] >= 128) {
                bytes.assign(rest, rest + n);
            } else {
                const std::size_t at =
                        bytes.empty() ? 0 : (data[2] | (std::size_t{data[3]} << 8)) % bytes.size();
                if (bytes.size() < at + n) bytes.resize(at + n);
                std::memcpy(bytes.data() + at, rest, n);
            }
        }
        const fs::path path = fs::path(work) / archive[i].relative;
        fs::create_directories(path.parent_path());
        std::ofstream(path, std::ios::binary)
                .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    const std::string anchor = work + "/traces.otf2";
    read(anchor, "");
    read(anchor, "1");
    return 0;
}
