/* SPDX-License-Identifier: BSD-3-Clause */
// Output files that cannot be hijacked: traces and reports are often written
// into shared directories (mode 1777), where another user can plant
// `rank0.trace -> /some/file`, a FIFO that would block the open, or a hard
// link. Opening never follows a symbolic link in the last component, never
// blocks, creates new files exclusively with the given mode, and opens an
// existing file only when it is a regular file of this user with one name.
#pragma once

#include "base/error.h"
#include <stdexcept>
#include <string>

#include <sys/types.h>

namespace slim::base {

// what() is "PATH: reason" and says why the file was refused.
class OutputFileError : public Error {
public:
    using Error::Error;
};

enum class ExistingFile {
    truncate,  // a trace: this process's file, written anew
    append,    // a shared report: every rank appends its lines (O_APPEND)
};

// Opens `path` for writing and returns the descriptor (O_CLOEXEC; the caller
// closes it). A new file is created with O_EXCL and `mode` (under the
// umask). Throws OutputFileError when the path is a symbolic link, not a
// regular file (a FIFO is refused without waiting for a reader), owned by
// another user, has more than one hard link, or cannot be opened.
int open_output_file(const std::string& path, ExistingFile existing, mode_t mode);

}  // namespace slim::base
