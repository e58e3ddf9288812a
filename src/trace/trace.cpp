// SPDX-License-Identifier: BSD-3-Clause
#include "trace.h"

#include "base/error.h"
#include "base/output_file.h"

#include <ext/stdio_filebuf.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <utility>

#include <sys/stat.h>

namespace slim::predict {

namespace {

constexpr std::size_t max_fields = 5;
constexpr std::array<const char *, max_fields> field_names{"t_start_ns", "t_end_ns", "event_id",
                                                           "bytes", "packed_bytes"};
// Times stop at 2^62 ns (146 years): what replay adds to a time (gaps,
// timeouts, reactivation) and multiplies by power must not overflow, which
// made timestamps near 2^63 replay to negative energy.
constexpr std::uint64_t max_time_ns = (std::uint64_t{1} << 62) - 1;
constexpr std::array<std::uint64_t, max_fields> field_max{
        max_time_ns, max_time_ns, std::numeric_limits<EventId>::max(),
        std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::uint64_t>::max()};

// '\r' counts as a blank so that traces written on Windows read unchanged.
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view text)
{
    for (const char c : text) {
        if (!is_digit(c)) {
            return false;
        }
    }
    return !text.empty();
}

// 'text' for messages, cut short and escaped (escape_for_message()).
std::string quoted(std::string_view text) { return "'" + escape_for_message(text, 40) + "'"; }

std::uint64_t parse_field(std::size_t index, std::string_view text)
{
    const std::string name = field_names[index];
    if (text.front() == '-' && all_digits(text.substr(1))) {
        throw Error(name + " " + quoted(text) + " is negative");
    }
    // Digits only: from_chars alone would take "12abc" as 12, and we also
    // refuse '+', fractions and units.
    if (!all_digits(text)) {
        throw Error(name + " " + quoted(text) + " is not a non-negative decimal integer");
    }
    std::uint64_t value  = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || value > field_max[index]) {
        throw Error(name + " " + quoted(text) + " is out of range (at most " +
                    std::to_string(field_max[index]) + ")");
    }
    return value;
}

// The rules one event obeys on its own (order is the reader's business).
void check_event(const Event& e)
{
    if (e.start_ns < 0) {
        throw Error("t_start_ns " + std::to_string(e.start_ns) + " is negative");
    }
    if (e.end_ns < e.start_ns) {
        throw Error("t_end_ns " + std::to_string(e.end_ns) + " is before t_start_ns " +
                    std::to_string(e.start_ns) + " (negative duration)");
    }
    if (e.bytes != 0 && e.packed_bytes > e.bytes) {
        throw Error("packed_bytes " + std::to_string(e.packed_bytes) + " exceeds bytes " +
                    std::to_string(e.bytes) +
                    " (packing never grows a message; use bytes 0 "
                    "when the original size is unknown)");
    }
}

void check_wait(const Wait& w)
{
    if (w.start_ns < 0) {
        throw Error("wait t_start_ns " + std::to_string(w.start_ns) + " is negative");
    }
    if (w.end_ns < w.start_ns) {
        throw Error("wait t_end_ns " + std::to_string(w.end_ns) + " is before its t_start_ns " +
                    std::to_string(w.start_ns) + " (negative duration)");
    }
}

std::string wait_order_message(TimeNs start, TimeNs previous_end)
{
    return "wait t_start_ns " + std::to_string(start) + " is before the previous wait's t_end_ns " +
           std::to_string(previous_end) + " (waits must be sorted and must not overlap)";
}

std::string order_message(TimeNs start, TimeNs previous_end)
{
    return "t_start_ns " + std::to_string(start) + " is before the previous event's t_end_ns " +
           std::to_string(previous_end) + " (events must be sorted and must not overlap)";
}

// The next blank-separated token of `line` from `pos`; false at the end.
bool next_token(std::string_view line, std::size_t& pos, std::string_view& token)
{
    while (pos < line.size() && is_blank(line[pos])) {
        ++pos;
    }
    if (pos == line.size()) {
        return false;
    }
    const std::size_t start = pos;
    while (pos < line.size() && !is_blank(line[pos])) {
        ++pos;
    }
    token = line.substr(start, pos - start);
    return true;
}

// Room for five 20-digit fields, their separators and '\n', with spare room
// after the last digit so that a separator always fits.
using LineBuffer = std::array<char, 128>;

// Writes the trace line of `event` (no '\n') into `buf`; returns its end.
// No allocation: the runtime writes traces from its event path.
char *format_into(LineBuffer& buf, const Event& event)
{
    char *p          = buf.data();
    char *const last = buf.data() + buf.size() - 8;
    auto field       = [&](auto value, bool separator) {
        if (separator) {
            *p++ = ' ';
        }
        p = std::to_chars(p, last, value).ptr;
    };
    field(event.start_ns, false);
    field(event.end_ns, true);
    field(event.id, true);
    if (event.bytes != 0 || event.packed_bytes != 0) {
        field(event.bytes, true);
    }
    if (event.packed_bytes != 0) {
        field(event.packed_bytes, true);
    }
    return p;
}

// The same for a wait line: "w t_start_ns t_end_ns".
char *format_wait_into(LineBuffer& buf, const Wait& wait)
{
    char *p          = buf.data();
    char *const last = buf.data() + buf.size() - 8;
    *p++             = 'w';
    *p++             = ' ';
    p                = std::to_chars(p, last, wait.start_ns).ptr;
    *p++             = ' ';
    return std::to_chars(p, last, wait.end_ns).ptr;
}

std::string errno_text(int err) { return err != 0 ? std::strerror(err) : "unknown error"; }

}  // namespace

TraceError::TraceError(const std::string& file, std::size_t line, const std::string& message)
    : Error(line != 0 ? file + ":" + std::to_string(line) + ": " + message : file + ": " + message),
      file_(file), line_(line), message_(message)
{}

std::string escape_for_message(std::string_view text, std::size_t max_shown)
{
    std::string out;
    out.reserve(std::min(text.size(), max_shown) + 3);
    for (const char c : text.substr(0, max_shown)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7f && c != '\\') {
            out.push_back(c);
        } else {
            static constexpr char hex[] = "0123456789abcdef";
            out.append("\\x").push_back(hex[byte >> 4]);
            out.push_back(hex[byte & 15]);
        }
    }
    if (text.size() > max_shown) {
        out.append("...");
    }
    return out;
}

std::optional<Event> parse_trace_line(std::string_view line)
{
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) {
        line = line.substr(0, hash);
    }
    std::array<std::uint64_t, max_fields> values{};
    std::size_t count = 0;
    std::size_t pos   = 0;
    std::string_view token;
    while (next_token(line, pos, token)) {
        if (count == max_fields) {
            std::size_t total = count + 1;
            while (next_token(line, pos, token)) {
                ++total;
            }
            throw Error("too many fields: " + std::to_string(total) +
                        " (at most 5: t_start_ns t_end_ns event_id bytes packed_bytes)");
        }
        values[count] = parse_field(count, token);
        ++count;
    }
    if (count == 0) {
        return std::nullopt;
    }
    if (count < 3) {
        throw Error("too few fields: " + std::to_string(count) +
                    " (expected t_start_ns t_end_ns event_id [bytes] "
                    "[packed_bytes])");
    }
    Event e;
    e.start_ns     = static_cast<TimeNs>(values[0]);
    e.end_ns       = static_cast<TimeNs>(values[1]);
    e.id           = static_cast<EventId>(values[2]);
    e.bytes        = values[3];
    e.packed_bytes = values[4];
    check_event(e);
    return e;
}

std::string format_trace_line(const Event& event)
{
    LineBuffer buf;
    return std::string(buf.data(), format_into(buf, event));
}

std::optional<Wait> parse_wait_line(std::string_view line)
{
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) {
        line = line.substr(0, hash);
    }
    std::size_t pos = 0;
    std::string_view token;
    if (!next_token(line, pos, token) || token != "w") {
        return std::nullopt;
    }
    std::array<std::uint64_t, 2> values{};
    std::size_t count = 0;
    while (next_token(line, pos, token)) {
        if (count == values.size()) {
            throw Error("too many fields in a wait line (expected w t_start_ns t_end_ns)");
        }
        values[count] = parse_field(count, token);
        ++count;
    }
    if (count < values.size()) {
        throw Error("too few fields in a wait line: " + std::to_string(count) +
                    " (expected w t_start_ns t_end_ns)");
    }
    Wait wait{static_cast<TimeNs>(values[0]), static_cast<TimeNs>(values[1])};
    check_wait(wait);
    return wait;
}

std::string format_wait_line(const Wait& wait)
{
    LineBuffer buf;
    return std::string(buf.data(), format_wait_into(buf, wait));
}

// ------------------------------------------------------------------ reader

TraceReader::TraceReader(const std::string& path) : in_(&std::cin), name_(path)
{
    if (path == "-") {
        name_ = "<stdin>";
        return;
    }
    errno = 0;
    file_.open(path, std::ios::in | std::ios::binary);
    if (!file_) {
        throw TraceError(path, 0, "cannot open: " + errno_text(errno));
    }
    // A directory opens, then fails on the first read as a bare "read
    // error": say what it is.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        throw TraceError(path, 0, "is a directory, not a trace file");
    }
    in_ = &file_;
}

TraceReader::TraceReader(std::istream& in, std::string name) : in_(&in), name_(std::move(name)) {}

TraceReader::TraceReader(std::vector<Event> events, std::string name)
    : in_(nullptr), memory_(std::move(events)), name_(std::move(name))
{}

bool TraceReader::rewind()
{
    if (in_ != nullptr) {
        return false;
    }
    memory_next_ = 0;
    line_        = 0;
    events_      = 0;
    previous_end_.reset();
    waits_.clear();
    wait_count_ = 0;
    previous_wait_end_.reset();
    return true;
}

void TraceReader::fail(const std::string& message) const
{
    throw TraceError(name_, line_, message);
}

Event TraceReader::accept(const Event& event)
{
    if (previous_end_ && event.start_ns < *previous_end_) {
        fail(order_message(event.start_ns, *previous_end_));
    }
    previous_end_ = event.end_ns;
    ++events_;
    return event;
}

void TraceReader::accept_wait(const Wait& wait)
{
    if (previous_wait_end_ && wait.start_ns < *previous_wait_end_) {
        throw Error(wait_order_message(wait.start_ns, *previous_wait_end_));
    }
    previous_wait_end_ = wait.end_ns;
    waits_.push_back(wait);
    ++wait_count_;
}

std::optional<Event> TraceReader::next_in_memory()
{
    if (memory_next_ == memory_.size()) {
        return std::nullopt;
    }
    const Event& event = memory_[memory_next_++];
    ++line_;
    // The bound parse_field() puts on a text trace's times.
    for (const auto& [field, value] :
         {std::pair{"t_start_ns", event.start_ns}, std::pair{"t_end_ns", event.end_ns}}) {
        if (value > static_cast<TimeNs>(max_time_ns)) {
            fail(std::string(field) + " " + std::to_string(value) + " is out of range (at most " +
                 std::to_string(max_time_ns) + ")");
        }
    }
    try {
        check_event(event);
    } catch (const Error& e) {
        fail(e.what());
    }
    return accept(event);
}

std::optional<Event> TraceReader::next()
{
    if (in_ == nullptr) {
        return next_in_memory();
    }
    // A fixed buffer, not std::getline: one giant line (or /dev/zero, which
    // has none) must not grow the reader without bound. A line holds at
    // most 5 fields of 20 digits; the rest is room for comments.
    buffer_.resize(max_line_bytes + 1);
    while (true) {
        in_->getline(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
        const auto got = static_cast<std::size_t>(in_->gcount());
        if (in_->bad()) {
            ++line_;
            fail("read error" + (errno != 0 ? ": " + errno_text(errno) : std::string()));
        }
        if (in_->fail()) {
            if (got == 0 && in_->eof()) {
                return std::nullopt;
            }
            // max_line_bytes stored and the line goes on.
            ++line_;
            fail("line longer than " + std::to_string(max_line_bytes) + " bytes");
        }
        ++line_;
        // gcount() counts the '\n' extracted, except on a last line without one.
        const std::size_t length = in_->eof() ? got : got - 1;
        const std::string_view text(buffer_.data(), length);
        std::optional<Event> event;
        try {
            if (const std::optional<Wait> wait = parse_wait_line(text)) {
                accept_wait(*wait);
                continue;
            }
            event = parse_trace_line(text);
        } catch (const Error& e) {
            fail(e.what());
        }
        if (event) {
            return accept(*event);
        }
    }
}

// ------------------------------------------------------------------ writer

TraceWriter::TraceWriter(const std::string& path) : out_(nullptr), name_(path)
{
    int fd = -1;
    try {
        fd = base::open_output_file(path, base::ExistingFile::truncate, 0600);
    } catch (const base::OutputFileError& e) {
        // e.what() starts with the path, which TraceError adds itself.
        const std::string why = e.what();
        throw TraceError(path, 0, why.substr(std::min(why.size(), path.size() + 2)));
    }
    // libstdc++'s stdio_filebuf adopts the descriptor and closes it. Its
    // buffer holds more than kFlushBytes, so it never writes on its own, in
    // the middle of a line (put_line flushes first).
    file_buf_ = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(
            fd, std::ios::out | std::ios::binary, 2 * kFlushBytes);
    file_ = std::make_unique<std::ostream>(file_buf_.get());
    out_  = file_.get();
}

TraceWriter::TraceWriter(std::ostream& out, std::string name) : out_(&out), name_(std::move(name))
{}

void TraceWriter::fail(std::size_t line, const std::string& message) const
{
    throw TraceError(name_, line, message);
}

void TraceWriter::check_stream()
{
    if (!*out_) {
        fail(line_, "write failed");
    }
}

void TraceWriter::put_line(const char *data, std::size_t size)
{
    if (buffered_ + size > kFlushBytes && buffered_ > 0) {
        flush();
    }
    out_->write(data, static_cast<std::streamsize>(size));
    buffered_ += size;
}

void TraceWriter::comment(std::string_view text)
{
    while (true) {
        const std::size_t nl        = text.find('\n');
        const std::string_view part = text.substr(0, nl);
        std::string line            = "#";
        if (!part.empty()) {
            line += ' ';
            line += part;
        }
        line += '\n';
        put_line(line.data(), line.size());
        ++line_;
        check_stream();
        if (nl == std::string_view::npos) {
            return;
        }
        text.remove_prefix(nl + 1);
    }
}

void TraceWriter::write(const Event& event)
{
    try {
        check_event(event);
    } catch (const Error& e) {
        fail(line_ + 1, e.what());
    }
    if (previous_end_ && event.start_ns < *previous_end_) {
        fail(line_ + 1, order_message(event.start_ns, *previous_end_));
    }
    LineBuffer buf;
    char *end = format_into(buf, event);
    *end++    = '\n';
    put_line(buf.data(), static_cast<std::size_t>(end - buf.data()));
    ++line_;
    check_stream();
    previous_end_ = event.end_ns;
}

void TraceWriter::write(const Wait& wait)
{
    try {
        check_wait(wait);
    } catch (const Error& e) {
        fail(line_ + 1, e.what());
    }
    if (previous_wait_end_ && wait.start_ns < *previous_wait_end_) {
        fail(line_ + 1, wait_order_message(wait.start_ns, *previous_wait_end_));
    }
    LineBuffer buf;
    char *end = format_wait_into(buf, wait);
    *end++    = '\n';
    put_line(buf.data(), static_cast<std::size_t>(end - buf.data()));
    ++line_;
    check_stream();
    previous_wait_end_ = wait.end_ns;
}

void TraceWriter::flush()
{
    out_->flush();
    check_stream();
    flushed_line_ = line_;
    buffered_     = 0;
}

}  // namespace slim::predict
