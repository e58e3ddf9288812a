// SPDX-License-Identifier: BSD-3-Clause
#include "tools/trace_input.h"

#include "tools/otf2_trace.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>
#include <utility>

namespace slim::tools {

using predict::TraceError;
using predict::TraceReader;

TraceInput::TraceInput(std::string path, std::string location, bool twice)
    : path_(std::move(path)), location_(std::move(location))
{
    if (!twice || rereadable(path_)) {
        return;
    }
    kept_.emplace();
    if (path_ == "-") {
        *kept_ << std::cin.rdbuf();
    } else {
        std::ifstream in(path_, std::ios::in | std::ios::binary);
        if (!in) {
            TraceReader says_why(path_);  // throws TraceError, as for any trace
        }
        *kept_ << in.rdbuf();
    }
}

TraceReader& TraceInput::open()
{
    reader_.reset();
    // An OTF2 archive's events are in memory already: decoded once.
    if (owned_ && owned_->rewind()) {
        return *owned_;
    }
    owned_.reset();
    if (!kept_) {
        // A text trace, or an OTF2 archive (read whole, --location's
        // events kept in memory): src/tools/otf2_trace.h.
        owned_ = slim::tools::open_trace(path_, location_);
        return *owned_;
    }
    if (!location_.empty()) {
        throw TraceError(path_ == "-" ? std::string("<stdin>") : path_, 0,
                         "--location chooses a location of an OTF2 archive, and standard "
                         "input or a pipe is read as a text trace");
    }
    // An empty input leaves failbit set on the copy.
    kept_->clear();
    kept_->seekg(0);
    return reader_.emplace(*kept_, path_ == "-" ? std::string("<stdin>") : path_);
}

bool TraceInput::rereadable(const std::string& path)
{
    if (path == "-") {
        return false;
    }
    std::error_code ec;
    const auto type = std::filesystem::status(path, ec).type();
    // What cannot be read is said by the reader, as without --timeline.
    return ec || type == std::filesystem::file_type::regular ||
           type == std::filesystem::file_type::directory ||
           type == std::filesystem::file_type::not_found;
}

}  // namespace slim::tools
