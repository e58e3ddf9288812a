/* SPDX-License-Identifier: BSD-3-Clause */
// The slimlinkd protocol: the one place that says what crosses
// between a rank (client) and the node service that owns a port.
//
// One service per node and port owns the backend (emulated, ibmad, exec);
// the library in a rank only asks. Two channels per client:
//
// 1. A Unix-domain SOCK_SEQPACKET socket (message boundaries, and a close
//    the service sees at once, SIGKILL included): attach, nudges, the
//    end-of-job report exchange, status queries, detach. A message is a
//    MessageHeader followed by `length` payload bytes (at most
//    kMaxMessageBytes). The service checks the peer's credentials
//    (SO_PEERCRED): a per-user service refuses every other uid.
//
// 2. A demand ring in shared memory that the *service* creates for each
//    client (a memfd) and passes in the attach reply (SCM_RIGHTS). The
//    client writes only its own ring, so it can publish only for itself;
//    the service maps only the memory it created, never the client's.
//    Publishing is a few stores and one release store: no system call.
//    The service copies each record out before checking it, so a client
//    that scribbles on its ring cannot make the service read out of bounds;
//    a record that fails the checks (width out of range, time going back,
//    head running past the ring) drops the client: its socket is closed,
//    its demand is gone, and the port is what the others ask for.
//
// Time: CLOCK_MONOTONIC ns (std::chrono::steady_clock on Linux), the same
// in every process of a node.
//
// A client's demand is a step function of time: each record sets the
// width the client needs from `t_ns` on; a record with `until_ns` > t_ns
// asks for that width only until `until_ns` ("low until t") and full width
// after it, so the service can raise the port at a deadline without
// hearing from the client again. `through_ns` says up to when the client's
// timeline is complete (records with later times may still come; none
// with earlier). The port's width at any time is the maximum demand over
// live clients; full width when none is live.
//
// Versions. The header's version is checked exactly and stays 2: every
// message a version-2 peer knows is unchanged. What came later is an
// extension a service announces in the `features` of its attach_ok and
// status_reply headers (a field older services send as 0): a client sends
// an extension's messages only to a service that announced it, so an older
// client works with a newer service (it never sends them) and a newer
// client with an older one (it sees no feature, and its calls say so).
//
// The CPU extension (kFeatureCpu): the service also owns the node's core
// frequencies (src/service/cpu_controller.h). A rank asks "my cores low"
// while it waits and "my cores full" when it works again; the service
// lowers a core only when every rank that may run on it asked (the rule is
// in cpu_controller.h). The cores of a rank are the service's to find
// out: it reads the Cpus_allowed_list of the SO_PEERCRED pid in /proc at
// the attach, and again when the rank reports its affinity (cpu_affinity,
// which can only narrow what /proc says). Requests are fire-and-forget,
// one non-blocking message each, and never answered.
//
// The report-parts extension (kFeatureReportParts): a node report larger
// than one message (about 140 ranks of records) travels in parts. A client
// that reads them sets the feature in its deposit's header, to a service
// that announced it; the service then follows the node_report with
// node_report_part messages, the last with `last` 1, before any
// node_report_cpu. To a client that did not ask, the report is one message,
// and the rows that do not fit are left out (the service logs how many).
//
// Paths. Per-user service: $XDG_RUNTIME_DIR/slimlink/<port>.sock, or
// /tmp/slimlink-<uid>/<port>.sock without XDG_RUNTIME_DIR; the folder must
// belong to the user with mode 0700 and the socket to the user. System
// service (contrib/slimlinkd.service, root): /run/slimlink/<port>.sock,
// folder and socket owned by root, folder not writable by others. <port>
// is the port's name ("emulated", or "<device>-<port number>" for an HCA
// port), characters outside [A-Za-z0-9_.-] replaced by '_'. Clients try
// the system socket first.
#pragma once

#include "predict/link_model.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace slim::link::service {

inline constexpr std::uint32_t kMagic           = 0x646d6c73;  // "slmd"
inline constexpr std::uint16_t kProtocolVersion = 2;
inline constexpr std::uint32_t kMaxMessageBytes = 64 * 1024;

// How far the service's merge horizon may lag behind now (port_service.h):
// a client further behind no longer holds the others' accounting back. A
// healthy client's through_ns trails by a drain round (16 ms); this is far
// above it, and far below the 2 s a reporting rank waits beyond
// UCX_SLIM_REPORT_WAIT for its node report.
inline constexpr std::int64_t kMaxHorizonLagNs = 500'000'000;

// ---- socket messages -------------------------------------------------------

enum class MessageType : std::uint16_t {
    attach       = 1,   // client -> service: AttachRequest
    attach_ok    = 2,   // service -> client: AttachReply + SCM_RIGHTS ring fd
    refused      = 3,   // service -> client: Refusal, then the service closes
    nudge        = 4,   // client -> service: ring has new records (no payload)
    deposit      = 5,   // client -> service: Deposit + opaque rank record bytes
    deposit_ack  = 6,   // service -> client: DepositAck
    node_report  = 7,   // service -> client: NodeReportHeader + entries
    status       = 8,   // anyone -> service: no payload
    status_reply = 9,   // service -> asker: StatusReply + StatusClient[]
    detach       = 10,  // client -> service: leaving cleanly (no payload)
    // The CPU extension (kFeatureCpu):
    cpu_affinity     = 11,  // client -> service: CpuAffinity (its sched_getaffinity)
    cpu_request      = 12,  // client -> service: CpuRequest (never answered)
    cpu_status       = 13,  // anyone -> service: no payload
    cpu_status_reply = 14,  // service -> asker: CpuStatusReply + CpuStatusCore[]
    node_report_cpu  = 15,  // service -> reporter, after a node_report whose
                            // port.cpu_section is 1: CpuSection + CpuSectionCore[]
    // The link profile extension (kFeatureLinkProfile):
    link_profile       = 16,  // client -> service, after attach_ok: no payload
    link_profile_reply = 17,  // service -> client: LinkProfileReply
    // The report-parts extension (kFeatureReportParts):
    node_report_part = 18,  // service -> reporter, after a node_report:
                            // NodeReportPart + entries
};
inline constexpr MessageType kLastMessageType = MessageType::node_report_part;

// Features a service announces (MessageHeader::features of attach_ok and
// status_reply).
enum Features : std::uint32_t {
    kFeatureCpu         = 1u << 0,  // the CPU messages (11..14)
    kFeatureLinkProfile = 1u << 1,  // link_profile (16, 17)
    kFeatureReportParts = 1u << 2,  // node_report_part (18)
};

struct MessageHeader {
    std::uint32_t magic   = kMagic;
    std::uint16_t version = kProtocolVersion;
    std::uint16_t type    = 0;  // MessageType
    std::uint32_t length  = 0;  // payload bytes after this header
    // attach_ok, status_reply: the service's Features; deposit: the
    // extensions the client reads in answer (kFeatureReportParts); else 0.
    std::uint32_t features = 0;
};
static_assert(sizeof(MessageHeader) == 16);

inline constexpr std::size_t kJobKeyBytes = 128;
inline constexpr std::size_t kHostBytes   = 64;
inline constexpr std::size_t kNameBytes   = 32;
inline constexpr std::size_t kTextBytes   = 256;

// A fixed char field as a string, up to its first NUL or its end: the peer
// may fill all of it.
template <std::size_t N>
std::string text_of(const char (&field)[N])
{
    std::size_t n = 0;
    while (n < N && field[n] != '\0') {
        ++n;
    }
    return std::string(field, n);
}

struct AttachRequest {
    std::uint32_t full_width   = 0;  // lanes the client's profile expects; 0: any
    std::int32_t rank          = -1;
    std::int32_t local_rank    = -1;
    std::int32_t local_size    = 0;   // ranks of its job on this node (0: unknown)
    std::int64_t pid           = 0;   // for messages only: SO_PEERCRED is trusted
    char job_key[kJobKeyBytes] = {};  // NUL-terminated; groups a job's ranks
};

struct AttachReply {
    std::uint32_t client_id     = 0;
    std::uint32_t full_width    = 0;
    std::uint32_t low_width     = 0;
    std::uint32_t ring_capacity = 0;  // records in the ring
    std::uint64_t ring_bytes    = 0;  // size of the memfd to map
    std::int64_t tau_ns         = 0;
    double lane_watts           = 0.0;
    char backend[kNameBytes]    = {};  // "emulated", "ibmad", "exec"
    char port[kNameBytes]       = {};  // the port's name
};

struct Refusal {
    char reason[kTextBytes] = {};  // NUL-terminated, for the client's log
};

// The client's rank record travels as opaque bytes: the service keeps and
// returns them to the job's reporting client unread (the runtime's
// RankRecord, checked there by size and version).
struct Deposit {
    std::uint32_t record_version = 0;
    std::uint32_t record_bytes   = 0;  // bytes following this struct
    std::int64_t wait_ns         = 0;  // UCX_SLIM_REPORT_WAIT of the client
};

struct DepositAck {
    // 1: this client, the first of its job to deposit, writes the job's
    // node report (a node_report message follows when the job's set is
    // complete or wait_ns ran out); 0: another client of the job will.
    std::uint32_t reporter = 0;
    std::uint32_t reserved = 0;
};

// The port over one job's span (first record of any of its clients to the
// last `through_ns`): what the node's link section shows.
struct PortSection {
    char backend[kNameBytes]                     = {};
    char port[kNameBytes]                        = {};
    std::uint32_t lanes                          = 0;
    std::uint32_t has_energy                     = 0;  // emulated: energy fields are set
    std::int64_t span_ns                         = 0;
    double energy_joules                         = 0.0;
    double baseline_joules                       = 0.0;  // always-on over the span
    std::uint64_t transitions                    = 0;
    std::uint64_t late_wakeups                   = 0;
    std::int64_t wakeup_delay_ns                 = 0;
    std::int64_t time_at_width_ns[kMaxLanes + 1] = {};
    std::int64_t time_in_transition_ns           = 0;
    std::uint32_t clients_seen                   = 0;  // clients of other jobs that shared the port
    std::uint32_t other_jobs                     = 0;
    // What the numbers above do not cover. The job's own span (its first
    // record, or first attach, to its last through_ns / leave); the part of
    // it the port's accounting had not reached when the report was due (a
    // stalled client of another job held the merge back); records applied
    // late, at the merge horizon instead of their time, because their
    // client had fallen more than the service's bound behind (they could
    // not act in the past on a real port either); and how many clients
    // fell that far behind during the span.
    std::int64_t job_span_ns      = 0;
    std::int64_t uncovered_ns     = 0;
    std::uint64_t late_records    = 0;
    std::uint32_t stalled_clients = 0;
    // The backend failed (a command failed or hung): the service stopped
    // driving the port, `transitions` counts only what the port confirmed.
    std::uint32_t backend_failed = 0;
    // The port's width is not known: a restore to full width failed, or a
    // previous service left the port narrow and restoring it has not
    // succeeded yet. Not "full width".
    std::uint32_t width_unknown = 0;
    // 1: a node_report_cpu message follows (the CPU controller ran); a
    // client that does not read it closes after the node_report.
    std::uint32_t cpu_section = 0;
    char problem[kTextBytes]  = {};  // why (backend_failed / width_unknown)
};

enum class EntryState : std::uint32_t {
    reported      = 0,  // deposited a record
    died          = 1,  // socket closed without a deposit
    timed_out     = 2,  // still attached when wait_ns ran out
    never_started = 3,  // local rank below local_size that never attached
};

// Entries past what the node_report held, in order (kFeatureReportParts).
struct NodeReportPart {
    std::uint32_t entries = 0;  // NodeReportEntry (+ record bytes) following
    std::uint32_t last    = 0;  // 1: the report's last part
};

// One per local rank of the job, in local-rank order.
struct NodeReportEntry {
    std::int32_t rank            = -1;
    std::int32_t local_rank      = -1;
    std::int64_t pid             = 0;
    std::uint32_t state          = 0;  // EntryState
    std::uint32_t record_bytes   = 0;  // opaque record bytes follow (reported only)
    std::uint64_t late_wakeups   = 0;  // the port's late wake-ups on this client's traffic
    std::int64_t wakeup_delay_ns = 0;
};

struct NodeReportHeader {
    PortSection port;
    std::uint32_t entries        = 0;
    std::uint32_t record_version = 0;
};

struct StatusReply {
    char backend[kNameBytes]   = {};
    char port[kNameBytes]      = {};
    std::uint32_t full_width   = 0;
    std::uint32_t width        = 0;  // width last commanded to the backend
    std::uint32_t live_clients = 0;
    // Live clients of other users than the asker, counted but not listed
    // (a system instance shows a user only its own clients; root all).
    std::uint32_t other_users_clients = 0;
    std::int64_t pid                  = 0;  // the service's
    std::uint64_t clients_dropped     = 0;  // refused or dropped for bad input
    std::uint64_t backend_errors      = 0;
    std::uint32_t backend_failed      = 0;  // the service no longer drives the port
    std::uint32_t width_unknown       = 0;  // see PortSection::width_unknown
    char problem[kTextBytes]          = {};
};

struct StatusClient {
    std::uint32_t client_id = 0;
    std::uint32_t demand    = 0;  // width it needs now
    std::int32_t rank       = -1;
    std::int32_t uid        = -1;
    std::int64_t pid        = 0;
};

// ---- the link profile extension (kFeatureLinkProfile) ---------------------
// AttachReply carries the port's lanes, low width, tau and lane watts; a
// profile may say more (an EEE port's sleep time, the low width's power, the
// preset's name). The whole spec travels as text (predict/link_profile.h),
// which the rank parses as slim-replay --link does, so its own model is the
// service's and a new key needs no new message.
struct LinkProfileReply {
    char spec[kTextBytes] = {};  // NUL-terminated link_spec()
};

// ---- the CPU extension (kFeatureCpu) ---------------------------------------

// Cores as a bit set, as sched_getaffinity's cpu_set_t (CPU_SETSIZE cores):
// a fixed size, so a client cannot make the service hold more.
inline constexpr std::uint32_t kMaxCpus      = 1024;
inline constexpr std::uint32_t kCpuMaskWords = kMaxCpus / 64;

struct CpuAffinity {
    std::uint64_t mask[kCpuMaskWords] = {};  // bit c of word c/64: core c
};

enum class CpuLevel : std::uint32_t {
    full = 0,  // this rank works again: its cores back to full
    low  = 1,  // this rank waits: its cores may go low
};

struct CpuRequest {
    std::uint32_t level    = 0;  // CpuLevel
    std::uint32_t reserved = 0;
    std::int64_t t_ns      = 0;  // when the rank decided (for the service's log)
};

struct CpuStatusReply {
    char backend[kNameBytes]  = {};  // "emulated", "cpufreq", "exec"
    std::uint32_t cores       = 0;   // the backend's cores
    std::uint32_t cores_low   = 0;   // set low now
    std::uint32_t ranks       = 0;   // attached ranks whose cores are known
    std::uint32_t ranks_low   = 0;   // of them, asking low now
    std::uint32_t failed      = 0;   // the backend failed: every core restored, no longer driven
    std::uint32_t has_energy  = 0;   // emulated: the energy fields are set
    std::uint64_t transitions = 0;   // core state changes commanded
    std::uint64_t requests    = 0;   // low/full requests received
    std::int64_t span_ns      = 0;   // accounting from the service's start
    std::int64_t time_low_ns  = 0;   // summed over cores
    std::int64_t penalty_ns   = 0;   // modelled: per raise, tau + the handling at f_low
    double energy_joules      = 0.0;
    double baseline_joules    = 0.0;  // every core always at full frequency
    char problem[kTextBytes]  = {};   // why failed
};

struct CpuStatusCore {
    std::uint32_t core      = 0;
    std::uint32_t low       = 0;  // 1: set low now
    std::uint32_t ranks     = 0;  // ranks that may run on it
    std::uint32_t ranks_low = 0;  // of them, asking low
};

// The CPU over one job (node_report_cpu): each core the job's ranks were
// mapped to, from its first rank's mapping to the report, and the sums.
struct CpuSectionCore {
    std::uint32_t core          = 0;
    std::uint32_t ranks         = 0;  // the job's ranks that may run on it
    std::uint64_t low_requests  = 0;  // the job's ranks' requests, on this core
    std::uint64_t full_requests = 0;
    std::uint64_t refused       = 0;  // low requests that left it at full: shared
    std::uint64_t transitions   = 0;  // the core's state changes over the span
    std::int64_t span_ns        = 0;
    std::int64_t time_low_ns    = 0;    // set low, transitions included
    std::int64_t penalty_ns     = 0;    // modelled (emulated)
    double energy_joules        = 0.0;  // emulated: at the table's powers
    double baseline_joules      = 0.0;  // emulated: at full over the span
};

struct CpuSection {
    char backend[kNameBytes]    = {};
    std::uint32_t cores         = 0;  // CpuSectionCore entries that follow
    std::uint32_t cores_mapped  = 0;  // all of them (more than `cores` when cut)
    std::uint32_t cores_refused = 0;  // cores some low request left at full
    std::uint32_t has_energy    = 0;  // emulated: the energy fields are set
    std::uint32_t failed        = 0;  // the backend failed: cores restored, not driven
    std::uint32_t reserved      = 0;
    // The job's ranks' requests, each once; the rest sums over every
    // mapped core (the entries' fields).
    std::uint64_t low_requests  = 0;
    std::uint64_t full_requests = 0;
    std::uint64_t transitions   = 0;
    std::int64_t span_ns        = 0;  // the job's: its first mapping to the report
    std::int64_t time_low_ns    = 0;
    std::int64_t penalty_ns     = 0;
    double energy_joules        = 0.0;
    double baseline_joules      = 0.0;
    char problem[kTextBytes]    = {};
};

// ---- the demand ring (shared memory, created by the service) -------------

enum RecordFlags : std::uint32_t {
    kTraffic = 1u << 0,  // traffic needing `width` starts at t_ns (a late
                         // wake-up if the port is narrower then)
};

struct DemandRecord {
    std::int64_t t_ns     = 0;
    std::int64_t until_ns = 0;  // 0: until the next record
    std::uint32_t width   = 0;  // 1..full_width
    std::uint32_t flags   = 0;  // RecordFlags
};
static_assert(sizeof(DemandRecord) == 24);

inline constexpr std::uint64_t kRingMagic    = 0x31676e72646d6c73ULL;  // "slmdrng1"
inline constexpr std::uint32_t kRingCapacity = 4096;                   // power of two

// Written by the client: head, through_ns, overflowed.
// Written by the service: tail, port_width, closed.
struct DemandRing {
    std::uint64_t magic      = kRingMagic;
    std::uint32_t capacity   = kRingCapacity;
    std::uint32_t full_width = 0;

    alignas(64) std::atomic<std::uint64_t> head{0};  // records published
    std::atomic<std::int64_t> through_ns{0};
    // Set by a client that could not publish (ring full): its demand is
    // full width from then on, the safe answer.
    std::atomic<std::uint32_t> overflowed{0};

    alignas(64) std::atomic<std::uint64_t> tail{0};  // records consumed
    std::atomic<std::uint32_t> port_width{0};  // the port's width now (for the client's reads)
    std::atomic<std::uint32_t> closed{0};      // the service dropped this client

    alignas(64) DemandRecord records[kRingCapacity];
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::int64_t>::is_always_lock_free);

}  // namespace slim::link::service
