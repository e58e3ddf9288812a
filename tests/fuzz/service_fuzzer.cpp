// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for what slimlinkd takes from its clients, built with
// clang++ -fsanitize=fuzzer,address by tests/fuzz/local.mk: socket messages
// (service_io.h: check_header, check_attach, check_deposit, as the server
// uses them) and ring contents (PortService::publish), driven into one
// PortService on the emulated port as the server would drive it. The input
// is a script of steps (one byte each, then its operands):
//   message: a length and that many bytes, taken as one received message
//            of a client chosen by the next byte (attach, deposit, detach);
//   ring:    a client, a record count and the records' bytes, then a
//            through_ns: what its ring holds at a consume;
//   overflow, advance, reports, and the clock moving on.
// A client whose message or records fail the checks is dropped, as the
// server drops it. Properties, after every step:
// - nothing crashes or reads out of bounds;
// - the port's width is within 1..full width, and so is every demand;
// - no client has more than PortService::kMaxQueuedRecords records queued
//   (memory bounded: the run's RSS is also capped by frame-fuzz's limit);
// - a report lists only clients of the reporter's own uid (their records
//   carry the uid they were deposited under);
// - the CPU messages (affinity, request, status), checked as the server
//   checks them and driven into a CpuController on the emulated cores:
//   a core is low only while every rank that may run on it asked for low,
//   and every core is back at full once the ranks are gone.
#include "link/backend.h"
#include "link/service_io.h"
#include "link/service_protocol.h"
#include "service/cpu_backend.h"
#include "service/cpu_controller.h"
#include "service/port_service.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace slim::link;
namespace svc = slim::link::service;
namespace io  = slim::link::service_io;

void check(bool ok)
{
    if (!ok) std::abort();
}

class Input {
public:
    Input(const std::uint8_t *data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const { return pos_ >= size_; }
    std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
    template <typename T>
    T value()
    {
        T v{};
        const std::size_t n = std::min(sizeof v, size_ - pos_);
        std::memcpy(&v, data_ + pos_, n);
        pos_ += n;
        return v;
    }
    // Up to `n` bytes, as an exact-size copy so that ASan sees any read past them.
    std::vector<std::uint8_t> bytes(std::size_t n)
    {
        n = std::min(n, size_ - pos_);
        std::vector<std::uint8_t> out(data_ + pos_, data_ + pos_ + n);
        pos_ += n;
        return out;
    }

private:
    const std::uint8_t *data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

struct Client {
    std::int32_t uid = 0;
    CoreSet cores;     // where it may run, as the controller was told
    bool low = false;  // its last CPU request
};

constexpr std::size_t kClients = 8;  // connection slots

struct World {
    std::unique_ptr<PortService> service;
    std::unique_ptr<CpuController> cpu;
    std::map<std::uint32_t, Client> clients;  // attached, by id
    std::uint32_t slot[kClients] = {};
    TimeNs now                   = 1'000'000;
};

void drop(World& w, std::size_t s, bool died)
{
    if (w.slot[s] != 0) {
        w.cpu->drop(w.slot[s], w.now);
        w.service->drop(w.slot[s], w.now, died);
        w.clients.erase(w.slot[s]);
        w.slot[s] = 0;
    }
}

void message(World& w, Input& in)
{
    const std::size_t s               = in.byte() % kClients;
    const std::uint8_t uid            = in.byte() % 3;
    const std::size_t n               = in.value<std::uint16_t>() % (io::kReceiveBytes + 1);
    const std::vector<std::uint8_t> m = in.bytes(n);
    svc::MessageHeader h;
    if (!io::check_header(m.data(), m.size(), h).empty()) {
        return drop(w, s, true);
    }
    check(sizeof h + h.length == m.size());
    const std::uint8_t *payload = m.data() + sizeof h;
    switch (static_cast<svc::MessageType>(h.type)) {
    case svc::MessageType::attach: {
        if (w.slot[s] != 0) {
            return drop(w, s, true);  // a second attach on one connection
        }
        svc::AttachRequest req;
        if (!io::check_attach(payload, h.length, w.service->full_width(), "emulated", req)
                     .empty()) {
            return;
        }
        ClientInfo info;
        info.rank       = req.rank;
        info.local_rank = req.local_rank;
        info.local_size = req.local_size;
        info.pid        = 100 + static_cast<std::int64_t>(s);
        info.uid        = uid;  // the socket's, not the request's
        info.job_key    = svc::text_of(req.job_key);
        std::string why;
        const std::uint32_t id = w.service->attach(info, w.now, &why);
        check(id != 0 || !why.empty());
        if (id != 0) {
            w.slot[s]     = id;
            w.clients[id] = Client{uid, w.cpu->backend().cores(), false};
            // The server reads where the peer may run from /proc; here it
            // may run on every core.
            w.cpu->set_cores(id, w.clients[id].cores, w.now);
        }
        return;
    }
    case svc::MessageType::cpu_affinity: {
        if (w.slot[s] == 0 || h.length != sizeof(svc::CpuAffinity)) {
            return drop(w, s, true);
        }
        svc::CpuAffinity claimed;
        std::memcpy(&claimed, payload, sizeof claimed);
        CoreSet claim;
        for (std::size_t i = 0; i < svc::kCpuMaskWords; ++i) {
            for (std::size_t b = 0; b < 64; ++b) {
                if ((claimed.mask[i] >> b) & 1u) {
                    claim.set(i * 64 + b);
                }
            }
        }
        Client& c = w.clients[w.slot[s]];
        if ((claim & c.cores).any()) {  // a claim may only narrow
            c.cores &= claim;
        }
        w.cpu->set_cores(w.slot[s], c.cores, w.now);
        return;
    }
    case svc::MessageType::cpu_request: {
        svc::CpuRequest r;
        if (w.slot[s] == 0 || h.length != sizeof r) {
            return drop(w, s, true);
        }
        std::memcpy(&r, payload, sizeof r);
        if (r.level != static_cast<std::uint32_t>(svc::CpuLevel::full) &&
            r.level != static_cast<std::uint32_t>(svc::CpuLevel::low)) {
            return drop(w, s, true);
        }
        const bool low = r.level == static_cast<std::uint32_t>(svc::CpuLevel::low);
        w.cpu->request(w.slot[s], low, w.now);
        w.clients[w.slot[s]].low = low;
        return;
    }
    case svc::MessageType::cpu_status: {
        if (h.length != 0) {
            return drop(w, s, true);
        }
        const svc::CpuStatusReply reply = w.cpu->status(w.now);
        (void)reply;
        check(w.cpu->core_status(64).size() <= 64);
        return;
    }
    case svc::MessageType::deposit: {
        svc::Deposit d;
        if (w.slot[s] == 0 || !io::check_deposit(payload, h.length, d).empty()) {
            return drop(w, s, true);
        }
        check(d.record_bytes == h.length - sizeof d);
        check(d.wait_ns >= 0 && d.wait_ns <= io::kMaxReportWaitNs);
        // The record is the depositor's uid, so a report shows whose it holds.
        const std::int32_t owner = w.clients[w.slot[s]].uid;
        std::vector<std::uint8_t> record(sizeof owner);
        std::memcpy(record.data(), &owner, sizeof owner);
        w.service->deposit(w.slot[s], d.record_version, std::move(record), w.now, d.wait_ns);
        return;
    }
    case svc::MessageType::detach:
    case svc::MessageType::nudge:
    case svc::MessageType::status:
        if (h.type == static_cast<std::uint16_t>(svc::MessageType::detach)) {
            drop(w, s, false);
        }
        return;
    default: return drop(w, s, true);  // the service's to send
    }
}

void ring(World& w, Input& in)
{
    const std::size_t s     = in.byte() % kClients;
    const std::size_t count = in.value<std::uint16_t>() % (svc::kRingCapacity + 1);
    std::vector<svc::DemandRecord> records(count);
    for (auto& r : records) {
        if (in.byte() & 1) {
            r = in.value<svc::DemandRecord>();
        } else {  // mostly plausible records, so that they get past the checks
            r.t_ns     = w.now + in.byte();
            r.until_ns = (in.byte() & 1) ? r.t_ns + 1 + in.byte() : 0;
            r.width    = 1 + in.byte() % 4;
            r.flags    = in.byte() & 1;
            w.now      = r.t_ns;
        }
    }
    const TimeNs through = (in.byte() & 1) ? in.value<TimeNs>() : w.now;
    if (w.slot[s] == 0) {
        return;
    }
    std::string why;
    bool full = false;
    if (!w.service->publish(w.slot[s], records.data(), records.size(), through, &why, &full)) {
        check(!why.empty());
        drop(w, s, true);
    }
}

void reports(World& w)
{
    for (auto& [reporter, report] : w.service->ready_reports(w.now)) {
        const auto it = w.clients.find(reporter);
        check(it != w.clients.end());
        for (const auto& e : report.entries) {
            if (e.record.size() == sizeof(std::int32_t)) {
                std::int32_t owner = 0;
                std::memcpy(&owner, e.record.data(), sizeof owner);
                check(owner == it->second.uid);
            }
        }
        const svc::PortSection& p = report.port;
        check(p.lanes == w.service->full_width());
        check(p.span_ns >= 0);
    }
}

void invariants(World& w)
{
    const unsigned full = w.service->full_width();
    check(w.service->width() >= 1 && w.service->width() <= full);
    for (const auto& [id, c] : w.clients) {
        check(w.service->queued(id) <= PortService::kMaxQueuedRecords);
        const unsigned d = w.service->demand(id);
        check(d <= full);
    }
    check(w.service->live_clients() == w.clients.size());
    // A core is low only while every rank that may run on it asked for low.
    const CoreSet low = w.cpu->cores_low();
    for (const auto& [id, c] : w.clients) {
        if (!c.low) {
            check((low & c.cores).none());
        }
    }
    check((low & ~w.cpu->backend().cores()).none());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    Input in(data, size);
    World w;
    CpuBackendConfig cpu_config;
    cpu_config.emulated_cores = 8;
    w.cpu     = std::make_unique<CpuController>(make_emulated_cpu_backend(cpu_config, w.now));
    w.service = std::make_unique<PortService>([](Clock clock) {
        BackendConfig config;
        config.clock = std::move(clock);
        return make_emulated_backend(config).backend;
    });
    for (int steps = 0; steps < 256 && !in.empty(); ++steps) {
        switch (in.byte() % 7) {
        case 0: message(w, in); break;
        case 1: ring(w, in); break;
        case 2: {
            const std::size_t s = in.byte() % kClients;
            if (w.slot[s] != 0) w.service->overflowed(w.slot[s]);
            break;
        }
        case 3: w.service->advance(); break;
        case 4: w.service->act_on_deadlines(w.now); break;
        case 5: reports(w); break;
        default: w.now += in.value<std::uint32_t>(); break;
        }
        invariants(w);
    }
    for (std::size_t s = 0; s < kClients; ++s) {
        drop(w, s, false);
    }
    reports(w);
    invariants(w);
    check(w.cpu->cores_low().none());  // every core back at full
    return 0;
}
