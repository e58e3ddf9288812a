// SPDX-License-Identifier: BSD-3-Clause
#include "base/shared_segment.h"

#include "base/log.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace slim::base {

namespace {

// Closes the descriptor once mapped (or on any error).
struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
};

}  // namespace

void throw_segment_error(const std::string& what, const std::string& name, int err)
{
    throw SharedSegmentError(what + " failed for shared-memory segment '" + name +
                             "': " + std::strerror(err));
}

std::optional<SegmentMapping> map_private_segment(const std::string& name, std::size_t bytes,
                                                  std::chrono::nanoseconds init_wait)
{
    bool creator = true;
    int  fd      = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
        creator = false;
        fd      = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
        if (fd < 0 && errno == ENOENT) {
            return std::nullopt;  // unlinked by the last process out meanwhile
        }
    }
    if (fd < 0) {
        throw_segment_error("shm_open", name, errno);
    }
    const FdCloser closer{fd};

    struct stat st{};
    if (creator && ::fchmod(fd, 0600) != 0) {  // umask must not matter
        throw_segment_error("fchmod", name, errno);
    }
    if (::fstat(fd, &st) != 0) {
        throw_segment_error("fstat", name, errno);
    }
    // Checked before mapping: another user's segment is not to be trusted.
    if (st.st_uid != ::geteuid()) {
        throw SharedSegmentError("shared-memory segment '" + name + "' is owned by uid " +
                                 std::to_string(st.st_uid) + ", not by this user (uid " +
                                 std::to_string(::geteuid()) + "); refusing it");
    }
    if ((st.st_mode & 07777) != 0600) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        throw SharedSegmentError("shared-memory segment '" + name + "' has mode " + mode +
                                 ", not 0600; refusing it");
    }
    if (creator) {
        if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
            const int err = errno;
            ::shm_unlink(name.c_str());
            throw_segment_error("ftruncate", name, err);
        }
        st.st_size = static_cast<off_t>(bytes);
    }
    // A joiner may arrive between the creator's shm_open and ftruncate
    // (size 0); any other size is another layout.
    const auto deadline = std::chrono::steady_clock::now() + init_wait;
    while (st.st_size == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (::fstat(fd, &st) != 0) {
            throw_segment_error("fstat", name, errno);
        }
    }
    if (static_cast<std::size_t>(st.st_size) != bytes) {
        throw SharedSegmentError("shared-memory segment '" + name + "' has " +
                                 std::to_string(st.st_size) + " bytes, expected " +
                                 std::to_string(bytes) +
                                 " (left by a crashed creator, another job or another version? "
                                 "remove /dev/shm" + name + ")");
    }
    void* addr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        throw_segment_error("mmap", name, errno);
    }
    return SegmentMapping{addr, creator, deadline};
}

int init_robust_mutex(pthread_mutex_t* mutex)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    int rc = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    if (rc == 0) {
        rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    }
    if (rc == 0) {
        rc = pthread_mutex_init(mutex, &attr);
    }
    pthread_mutexattr_destroy(&attr);
    return rc;
}

bool wait_published(const std::atomic<std::uint64_t>& magic, std::uint64_t expected,
                    std::chrono::steady_clock::time_point deadline)
{
    // A creator publishes microseconds after creating: yield first, so that
    // a joiner is not put to sleep for a millisecond in which the creator
    // may come and go (and its segment be removed) many times.
    for (int spin = 0; spin < 1000; ++spin) {
        if (magic.load(std::memory_order_acquire) == expected) {
            return true;
        }
        std::this_thread::yield();
    }
    while (magic.load(std::memory_order_acquire) != expected) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

int lock_robust_mutex(pthread_mutex_t* mutex, const char* who, const std::string& name)
{
    const int rc = pthread_mutex_lock(mutex);
    if (rc == EOWNERDEAD) {
        logger().warn("{}: a process died holding the lock of '{}'; recovered", who, name);
        pthread_mutex_consistent(mutex);
        return 0;
    }
    return rc;
}

}  // namespace slim::base
