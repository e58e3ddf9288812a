// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the text trace reader (src/trace/trace.h), built
// with clang++ -fsanitize=fuzzer,address by tests/fuzz/local.mk. Traces come
// from other machines and other people. Properties, for any input read as a
// trace file:
// - the reader either ends or throws a TraceError "FILE:LINE: message"
//   whose message is short and holds only printable ASCII (a trace's bytes
//   must not reach the terminal raw);
// - every event it returns obeys the format's rules: times from 0 to
//   2^62-1, end not before start, sorted and not overlapping, packed_bytes
//   not above bytes (unless bytes is 0);
// - every event, formatted as a trace line, parses back to itself;
// - the same events given in memory read back the same way.
#include "trace/trace.h"

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace slim::predict;

void check(bool ok)
{
    if (!ok) std::abort();
}

void check_message(const TraceError& e, const std::string& name)
{
    const std::string what = e.what();
    check(what.compare(0, name.size() + 1, name + ":") == 0);
    // The longest message quotes a 40-byte token, escaped 4 bytes a byte.
    check(what.size() < 600);
    for (const char c : what) {
        const auto byte = static_cast<unsigned char>(c);
        check(byte >= 0x20 && byte < 0x7f);
    }
}

bool same(const Event& a, const Event& b)
{
    return a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.id == b.id && a.bytes == b.bytes &&
           a.packed_bytes == b.packed_bytes;
}

std::vector<Event> read_all(TraceReader& reader, const std::string& name, bool& failed)
{
    constexpr TimeNs max_time = (TimeNs{1} << 62) - 1;
    std::vector<Event> events;
    failed = false;
    try {
        while (const auto e = reader.next()) {
            check(e->start_ns >= 0 && e->start_ns <= e->end_ns && e->end_ns <= max_time);
            check(e->bytes == 0 || e->packed_bytes <= e->bytes);
            check(events.empty() || events.back().end_ns <= e->start_ns);
            const auto again = parse_trace_line(format_trace_line(*e));
            check(again && same(*again, *e));
            events.push_back(*e);
        }
    } catch (const TraceError& e) {
        check_message(e, name);
        failed = true;
    }
    return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    const std::string name = "fuzz.trace";
    std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
    TraceReader reader(in, name);
    bool failed                     = false;
    const std::vector<Event> events = read_all(reader, name, failed);
    check(reader.events() == events.size());

    TraceReader memory(events, name);
    bool memory_failed             = false;
    const std::vector<Event> again = read_all(memory, name, memory_failed);
    check(!memory_failed && again.size() == events.size());
    for (std::size_t i = 0; i < again.size(); ++i) {
        check(same(again[i], events[i]));
    }

    const std::string shown =
            escape_for_message(std::string_view(reinterpret_cast<const char *>(data), size), 64);
    check(shown.size() <= 4 * 64 + 3);
    for (const char c : shown) {
        const auto byte = static_cast<unsigned char>(c);
        check(byte >= 0x20 && byte < 0x7f);
    }
    return 0;
}
