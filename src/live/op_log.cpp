#include "live/op_log.h"

#include <algorithm>

namespace slim::live {

OpLog::OpLog(std::size_t shared_capacity, std::size_t serial_capacity)
    : shared_(shared_capacity), serial_capacity_(serial_capacity)
{
}

SerialOpRing* OpLog::open_serial()
{
    auto ring = std::make_unique<SerialOpRing>(serial_capacity_);
    const std::lock_guard<std::mutex> lock(mutex_);
    serial_.push_back(Source{std::move(ring), false});
    return serial_.back().ring.get();
}

void OpLog::close_serial(SerialOpRing* ring) noexcept
{
    if (ring == nullptr) {
        return;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    for (Source& s : serial_) {
        if (s.ring.get() == ring) {
            s.closed = true;
        }
    }
}

const OpRecord* OpLog::shared_head() noexcept
{
    if (!shared_peeked_) {
        shared_peeked_ = shared_.pop(shared_next_);
    }
    return shared_peeked_ ? &shared_next_ : nullptr;
}

void OpLog::free_closed_locked() noexcept
{
    const auto done = [this](Source& s) {
        if (!s.closed || s.ring->peek() != nullptr) {
            return false;
        }
        closed_dropped_ += s.ring->dropped();
        return true;
    };
    serial_.erase(std::remove_if(serial_.begin(), serial_.end(), done), serial_.end());
}

std::uint64_t OpLog::dropped() const noexcept
{
    const std::lock_guard<std::mutex> lock(mutex_);
    std::uint64_t n = shared_.dropped() + closed_dropped_;
    for (const Source& s : serial_) {
        n += s.ring->dropped();
    }
    return n;
}

std::size_t OpLog::serial_open() const noexcept
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::size_t>(
        std::count_if(serial_.begin(), serial_.end(), [](const Source& s) { return !s.closed; }));
}

}  // namespace slim::live
