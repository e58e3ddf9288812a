/* SPDX-License-Identifier: BSD-3-Clause */
// A port's state file, next to the service's socket: one line saying why
// the port may not be at full width. A service writes it when a real port
// first leaves full width and when a restore fails, and removes it once the
// port is confirmed back at full width at exit; a service killed while the
// port is narrow leaves it behind for the next one (PortService::
// use_state_file) and for slimlinkd --status.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace slim::link {

// The port's state file is the socket's path with this suffix.
inline constexpr const char *kStateFileSuffix = ".state";
// The cores' state file (cpu_backend.h, CpuBackend::use_state_file): the
// cores a backend changed and what to write back, one line each.
inline constexpr const char *kCpuStateFileSuffix = ".cpu-state";

// A state file's text, nullopt when there is none or it is not a regular
// file of this user (never follows a link, never blocks on a FIFO).
std::optional<std::string> read_state_file(const std::string& path);
// The same checks, the text as it is (at most `max_bytes`), for a file
// this code parses itself rather than shows.
std::optional<std::string> read_state_file_text(const std::string& path, std::size_t max_bytes);

class StateFile {
public:
    // Empty: no file (tests, or before the server has checked its folder).
    void set_path(std::string path) { path_ = std::move(path); }
    const std::string& path() const { return path_; }
    // This service wrote the file and has not removed it since.
    bool written() const { return written_; }

    // Replaces the file's text by `text` (mode 0600), followed by the kept
    // lines (keep()). A failure is logged: the service goes on, only the
    // next one will know less.
    void write(const std::string& text);
    // Removes the file, if there is one; a failure is logged. While lines
    // are kept the file holds them alone instead: what a previous service
    // left changed is never forgotten because this one restored its own.
    void remove();

    // A line a previous service left (the cores' state file) that this one
    // could not restore, and why: every write() adds it after the text,
    // under a note "# not restored by slimlinkd pid P: WHY"
    // (kNotRestoredNote), for the next service and slimlinkd --status; a
    // line without a reason (another kind's, not tried yet) goes first,
    // without a note.
    void keep(const std::string& line, const std::string& why);
    bool keeps() const { return !kept_.empty(); }

private:
    std::string kept_text() const;

    std::string path_;
    bool written_ = false;
    std::vector<std::pair<std::string, std::string>> kept_;  // line, why
};

// The start of the note above a kept line, followed by the pid and ": WHY".
inline constexpr const char *kNotRestoredNote = "# not restored by slimlinkd pid ";

}  // namespace slim::link
