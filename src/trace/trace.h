/* SPDX-License-Identifier: BSD-3-Clause */
// Event traces: text files with one Event per line, read by slim-replay and
// the benchmarks, written by the runtime. The format is specified in
// slim-replay(1), TRACE FORMAT:
//
//   # comment
//   t_start_ns t_end_ns event_id [bytes] [packed_bytes]   # trailing comment
//   w t_start_ns t_end_ns                                 # a rank's wait
//
// Wait lines (predict::Wait) are sorted and non-overlapping among
// themselves, like events, but independent of the events around them; a
// trace without them (every trace older than them) reads as before.
//
// The reader streams (10^7-line traces are normal) and rejects anything the
// predictor could not take -- in particular events out of order -- with a
// TraceError "FILE:LINE: message". The writer checks the same rules, so every
// trace it writes reads back. The reader also takes events already in memory
// (slim-replay's OTF2 archives, src/tools/otf2_trace.h) under the same rules.
#pragma once

#include "base/error.h"
#include "predict/types.h"

#include <cstddef>
#include <fstream>
#include <iosfwd>
#include <memory>
#include <ostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace slim::predict {

class TraceError : public Error {
public:
    // what() is "FILE:LINE: message".
    TraceError(const std::string& file, std::size_t line, const std::string& message);

    const std::string& file() const { return file_; }
    std::size_t line() const { return line_; }
    const std::string& message() const { return message_; }

private:
    std::string file_;
    std::size_t line_;
    std::string message_;
};

// `text` made safe for a message on a terminal: bytes that are not
// printable ASCII (and '\\') become \xNN, and only the first `max_shown`
// bytes are shown, followed by "..." when there are more. For file contents
// and names read from traces and archives, which may hold escape sequences.
std::string escape_for_message(std::string_view text, std::size_t max_shown);

// Parses one line (without its '\n'). Returns no event for a blank or
// comment-only line; throws slim::Error with the bare message
// (no FILE:LINE) for a bad line. Order against other events is not checked
// here: TraceReader does that.
std::optional<Event> parse_trace_line(std::string_view line);

// Formats one event as a trace line, without '\n'. bytes and packed_bytes are
// written only when needed (bytes when either is non-zero, packed_bytes when
// non-zero), so "start end id" is the common form.
std::string format_trace_line(const Event& event);

// A wait line ("w t_start_ns t_end_ns"): the wait, or none when `line` is
// not a wait line (an event, a comment or blank). Throws slim::Error with
// the bare message for a malformed wait line.
std::optional<Wait> parse_wait_line(std::string_view line);

// Formats one wait as a trace line, without '\n'.
std::string format_wait_line(const Wait& wait);

class TraceReader {
public:
    // The longest line a text trace may have, without its '\n': longer ones
    // are refused ("FILE:LINE: line longer than N bytes"), so that reading
    // never holds more than one such line in memory.
    static constexpr std::size_t max_line_bytes = 65536;

    // Reads `path`; "-" reads std::cin (named "<stdin>" in messages; call
    // std::ios::sync_with_stdio(false) first for speed on long traces).
    // Throws TraceError (line 0) when the file cannot be opened.
    explicit TraceReader(const std::string& path);
    // Reads from `in`, which must outlive the reader; `name` is the FILE of
    // error messages.
    TraceReader(std::istream& in, std::string name);
    // Reads `events`, converted from another format, under the rules of the
    // text format (each event valid, sorted, not overlapping); `name` is the
    // FILE of error messages and line() counts events from 1. The converter
    // need not check those rules itself.
    TraceReader(std::vector<Event> events, std::string name);

    TraceReader(const TraceReader&)            = delete;
    TraceReader& operator=(const TraceReader&) = delete;

    // The next event, or none at the end of the trace. Throws TraceError.
    // Wait lines met on the way are checked and kept for take_waits().
    std::optional<Event> next();

    // The waits read so far, in order; the reader forgets them.
    std::vector<Wait> take_waits() { return std::exchange(waits_, {}); }

    // Wait lines read so far.
    std::size_t wait_count() const { return wait_count_; }

    const std::string& name() const { return name_; }
    // Lines read so far (1-based): after next() returns an event, its line
    // (its index, for events given in memory).
    std::size_t line() const { return line_; }
    std::size_t events() const { return events_; }
    // Events given in memory: starts over at the first, as a new reader
    // would. False (and nothing changes) for a file or a stream.
    bool rewind();

private:
    [[noreturn]] void fail(const std::string& message) const;
    std::optional<Event> next_in_memory();
    Event accept(const Event& event);
    // Keeps a wait line's wait; throws slim::Error when it is out of order.
    void accept_wait(const Wait& wait);

    std::ifstream file_;  // owned input when constructed from a path
    std::istream *in_;    // null when the events are in memory
    std::vector<Event> memory_;
    std::size_t memory_next_ = 0;
    std::string name_;
    std::vector<char> buffer_;  // one line, at most max_line_bytes
    std::size_t line_   = 0;
    std::size_t events_ = 0;
    std::optional<TimeNs> previous_end_;
    std::vector<Wait> waits_;
    std::size_t wait_count_ = 0;
    std::optional<TimeNs> previous_wait_end_;
};

class TraceWriter {
public:
    // Creates `path` with mode 0600, or truncates it when it is already a
    // regular file of this user; never follows a symbolic link there
    // (base/output_file.h). Throws TraceError (line 0) saying why not.
    explicit TraceWriter(const std::string& path);
    // Writes to `out`, which must outlive the writer; `name` is the FILE of
    // error messages.
    TraceWriter(std::ostream& out, std::string name);

    TraceWriter(const TraceWriter&)            = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;

    // "# text", one comment line per line of `text`.
    void comment(std::string_view text);

    // Throws TraceError naming the line the event would have had when it
    // breaks a rule of the format (negative time, end < start, start before
    // the previous end, packed_bytes > bytes) or when writing fails.
    void write(const Event& event);

    // The same rules for a wait line, among the waits written before it.
    void write(const Wait& wait);

    // Flushes; throws TraceError when writing failed.
    void flush();
    // Lines written since the last flush() (they may still be in memory).
    bool unflushed() const { return line_ != flushed_line_; }

    // Lines are handed to the file in whole lines only, at the latest when
    // this many bytes of them are buffered: a process killed while writing
    // leaves a trace that ends on a complete line, never a cut one that
    // could still parse (a truncated byte count), and loses at most this
    // much that it did not flush itself.
    static constexpr std::size_t kFlushBytes = 4096;

    const std::string& name() const { return name_; }
    std::size_t lines() const { return line_; }

private:
    [[noreturn]] void fail(std::size_t line, const std::string& message) const;
    void check_stream();
    // Puts one whole line (with its newline), flushing first when it would
    // take the buffer past kFlushBytes.
    void put_line(const char *data, std::size_t size);

    std::unique_ptr<std::streambuf> file_buf_;  // owns the file's descriptor
    std::unique_ptr<std::ostream> file_;
    std::ostream *out_;
    std::string name_;
    std::size_t line_         = 0;
    std::size_t flushed_line_ = 0;
    std::size_t buffered_     = 0;  // bytes put since the last flush
    std::optional<TimeNs> previous_end_;
    std::optional<TimeNs> previous_wait_end_;
};

}  // namespace slim::predict
