/* SPDX-License-Identifier: BSD-3-Clause */
// The rank's side of slimlinkd (service_protocol.h says what crosses):
// find and attach to the node's service for a port, publish demand into the
// ring the service gave us (no system call), notice when the service is
// gone, and hand over the rank's record at the end of the job.
//
// ServiceBackend is the LinkBackend a rank's Controller drives when a
// service is reachable: each width it commands becomes a demand record, so
// the rank's own decisions stay exactly what they were while the port is
// driven by the maximum over the node's ranks, in the service.
#pragma once

#include "base/error.h"
#include "link/backend.h"
#include "link/service_protocol.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace slim::link {

class ServiceError : public Error {
public:
    using Error::Error;
};

// "<device>-<port>" / "emulated", made safe for a file name.
std::string service_port_name(const std::string& raw);
// /run/slimlink/<port>.sock
std::string system_socket_path(const std::string& port_name);
// $XDG_RUNTIME_DIR/slimlink/<port>.sock, else /tmp/slimlink-<uid>/<port>.sock
std::string user_socket_path(const std::string& port_name);
// The folder of user_socket_path(): created 0700 by the service, checked by
// clients (owner and mode).
std::string user_socket_dir();

// Before anything is sent to `socket_path`: it must be a socket, and it and
// its folder must belong to whoever the caller trusts. `system`: root, the
// folder not writable by group or others; otherwise this user, folder mode
// 0700. A socket another user planted would receive our demand and records,
// or hold us in connect(). Throws ServiceError naming the path and why.
void check_service_socket(const std::string& socket_path, bool system);

// Connects without blocking: AF_UNIX answers at once, or EAGAIN while the
// listener's backlog is full (a service that does not accept), retried
// until `timeout`. Returns a non-blocking, close-on-exec descriptor; throws
// ServiceError naming the path and why.
int connect_service_socket(const std::string& socket_path, std::chrono::milliseconds timeout);

// What a reporting client receives at the end of its job.
struct ReceivedReport {
    service::PortSection port;
    std::uint32_t record_version = 0;
    struct Entry {
        service::NodeReportEntry entry;
        std::vector<std::uint8_t> record;
    };
    std::vector<Entry> entries;
    // The CPU over the job (node_report_cpu), when the service's CPU
    // controller ran: the sums and the cores it lists.
    std::optional<service::CpuSection> cpu;
    std::vector<service::CpuSectionCore> cpu_cores;
    // The port's profile (ServiceClient::link_spec()); empty from an older
    // service.
    std::string link_spec;
};

class ServiceClient {
public:
    // Connects to `socket_path` and attaches. `system`: the socket and its
    // folder must belong to root (folder not writable by group/others);
    // otherwise to this user, folder mode 0700. Throws ServiceError naming
    // the path and why: nothing listening, wrong owner or mode, refused (the
    // service's reason), protocol mismatch, timeout (`timeout` per step).
    static std::unique_ptr<ServiceClient>
    connect(const std::string& socket_path, bool system, const service::AttachRequest& request,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

    // The system socket if one is listening, else the user's. Throws
    // ServiceError with both attempts' reasons.
    static std::unique_ptr<ServiceClient>
    connect_any(const std::string& port_name, const service::AttachRequest& request,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

    ~ServiceClient();  // detach()
    ServiceClient(const ServiceClient&)            = delete;
    ServiceClient& operator=(const ServiceClient&) = delete;

    const service::AttachReply& info() const { return reply_; }
    // The port's whole link spec (predict/link_profile.h), when the service
    // offers the link profile extension; empty from an older service, whose
    // info() is all there is.
    const std::string& link_spec() const { return link_spec_; }
    // The service drives the emulated port (no hardware behind it).
    bool port_emulated() const { return service::text_of(reply_.backend) == "emulated"; }
    const std::string& socket_path() const { return path_; }

    // Lock-free, no system call. False when the ring is full: the ring's
    // overflowed flag is set and the service holds us at full width.
    bool publish(const service::DemandRecord& record) noexcept;
    // Our timeline is complete up to t (release store).
    void set_through(TimeNs t) noexcept;
    // Where the timeline stands: the service starts it at the attach (its
    // clock), so no record may be older than that.
    TimeNs through() const noexcept;
    // Once per drain round: if anything was published since the last nudge,
    // one non-blocking nudge (for an emulated port only once a quarter of
    // the ring waits); then a non-blocking check that the service is still
    // there. Returns false once it is gone (for good).
    bool sync() noexcept;
    bool service_lost() const noexcept { return lost_; }
    // The port's width as the service last published it (0 when lost).
    unsigned port_width() const noexcept;

    // The service offers the CPU extension (service_protocol.h): an older
    // service does not, and request_cpu() then sends nothing.
    bool cpu_supported() const noexcept
    {
        return (features_ & service::kFeatureCpu) != 0 && !lost_;
    }
    // Asks the service for this rank's cores low (while it waits) or back
    // to full (when it works again). Fire-and-forget: one non-blocking
    // message, no answer, no wait; a request for the level last asked is
    // not sent again. The first one also reports the rank's affinity
    // (sched_getaffinity, one system call, once). The service decides: a
    // core another rank may use stays at full. Returns false when nothing
    // was sent: no CPU extension, the service gone, or its socket full
    // (the level is then sent at the next sync(), the latest one wins).
    // Not for the send path: call it where a wait starts or ends.
    bool request_cpu(service::CpuLevel level, TimeNs t_ns) noexcept;

    // End of job: hands over the rank's record. Returns the node report
    // when this client is the job's reporter (waiting up to `wait` + a
    // margin for the other ranks); nullopt when another client reports.
    // Throws ServiceError when the service is gone or answers garbage.
    std::optional<ReceivedReport> deposit(std::uint32_t record_version, const void *record,
                                          std::size_t bytes, std::chrono::nanoseconds wait);

    // Leaves cleanly (detach message, close). Idempotent, never throws.
    void detach() noexcept;

private:
    ServiceClient() = default;
    int fd_         = -1;
    std::string path_;
    service::AttachReply reply_{};
    service::DemandRing *ring_ = nullptr;
    std::size_t ring_bytes_    = 0;
    std::uint64_t head_        = 0;  // our copy of ring_->head
    std::uint64_t nudged_head_ = 0;  // head at the last nudge
    // A real port acts on what it is told: nudged each round that published.
    // An emulated one is merged exactly however late it reads (its own
    // tick, 50 ms): nudged only once a quarter of the ring waits, because
    // each nudge wakes another process, which on a full machine preempts a
    // busy-polling rank (measured: 3-5 % of ping-pong latency on the 2-core
    // VM, drain and nudges together).
    bool nudge_every_round_ = true;
    bool lost_              = false;
    std::uint32_t features_ = 0;  // what the service announced at attach
    std::string link_spec_;
    // The CPU extension: the affinity is reported once; the level last sent
    // (-1: none yet), and one that could not be sent yet (-1: none).
    bool cpu_affinity_sent_ = false;
    int cpu_sent_           = -1;
    int cpu_pending_        = -1;
    TimeNs cpu_pending_ns_  = 0;
    // Sends one CPU message without blocking: 0, EAGAIN, or the service is
    // gone (lost_ set).
    int send_cpu(service::MessageType type, const void *payload, std::size_t bytes) noexcept;
};

// A LinkBackend that publishes the Controller's commands to the service.
// stats() is null (the port's numbers are the service's); traffic()
// returns 0 (the service counts late wake-ups per client).
std::unique_ptr<LinkBackend> make_service_backend(std::shared_ptr<ServiceClient> client,
                                                  Clock clock);

}  // namespace slim::link
