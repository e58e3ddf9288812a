/* SPDX-License-Identifier: BSD-3-Clause */
// The trace, read once -- or twice with --timeline N, which records the
// last N events and so needs the trace's length before the replay. A file
// is then simply read again. Standard input, a pipe or a device
// (--events <(zcat run.trace.gz)) can be read only once: its text is kept
// in memory for both passes.
#pragma once

#include "trace/trace.h"

#include <memory>
#include <optional>
#include <sstream>
#include <string>

namespace slim::tools {

class TraceInput {
public:
    // Throws predict::TraceError when a trace read only once cannot be opened.
    TraceInput(std::string path, std::string location, bool twice);

    // A reader from the trace's first line (replacing the last one opened).
    predict::TraceReader& open();

private:
    static bool rereadable(const std::string& path);

    std::string path_;
    std::string location_;
    std::optional<std::stringstream> kept_;
    std::optional<predict::TraceReader> reader_;
    std::unique_ptr<predict::TraceReader> owned_;
};

}  // namespace slim::tools
