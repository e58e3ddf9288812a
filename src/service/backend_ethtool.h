/* SPDX-License-Identifier: BSD-3-Clause */
// The "ethtool" link backend: Energy-Efficient Ethernet (IEEE 802.3az) of
// one interface, switched through the kernel's ethtool netlink family. An
// EEE port has one width that matters (lanes = 1) and may idle at 0:
//   width 1  a communication phase: TX LPI off, the PHY never sleeps;
//   width 0  predicted idle: TX LPI on, with the LPI entry timer of
//            --eee-timer (default: the timer the NIC had at the start);
//   rest     no client (and at exit, and after a failure once the last
//            client has gone): the settings found at the start, exactly.
// EEE itself (its advertisement, ETHTOOL_A_EEE_ENABLED) is never written:
// on many NICs that restarts auto-negotiation, a link down for seconds.
//
// The device is behind EeeDevice so that tests drive the backend over a
// fake; eee_netlink.cpp is the real one (libmnl).
#pragma once

#include "link/backend.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

struct nlmsghdr;

namespace slim::link {

// What the backend reads and writes of an interface's EEE.
struct EeeSettings {
    bool enabled           = false;  // EEE advertised (read, never written)
    bool tx_lpi_enabled    = false;  // the MAC may enter low-power idle
    std::uint32_t timer_us = 0;      // LPI entry timer, µs of idle before LPI

    bool operator==(const EeeSettings& o) const
    {
        return enabled == o.enabled && tx_lpi_enabled == o.tx_lpi_enabled && timer_us == o.timer_us;
    }
    bool operator!=(const EeeSettings& o) const { return !(*this == o); }
};

// "eee on, tx-lpi off, tx-timer 100 us", for logs and messages.
std::string describe(const EeeSettings& s);

// The answer of a device: the settings, or the error (errno) and the
// kernel's own words (its extended ack, e.g. a driver's "Setting EEE Tx LPI
// timer is not supported"), empty when it gave none.
struct EeeResult {
    int error = 0;  // 0: success
    std::string detail;
    EeeSettings settings;  // of a get that succeeded
};

class EeeDevice {
public:
    virtual ~EeeDevice()                   = default;
    EeeDevice()                            = default;
    EeeDevice(const EeeDevice&)            = delete;
    EeeDevice& operator=(const EeeDevice&) = delete;

    virtual EeeResult get() = 0;
    // Writes tx_lpi_enabled and timer_us only: `enabled` is never sent.
    virtual EeeResult set(const EeeSettings& settings) = 0;
};

// Opens interface `name`'s EEE; null with `why` when it cannot (no
// libmnl in this build, no netlink socket, no ethtool netlink family).
using EeeDeviceFactory =
        std::function<std::unique_ptr<EeeDevice>(const std::string& name, std::string& why)>;
// The kernel's, through libmnl (eee_netlink.cpp).
std::unique_ptr<EeeDevice> open_netlink_eee_device(const std::string& name, std::string& why);
bool netlink_eee_built();

// The EEE_SET request for `settings` on `device` in `buf` (at least
// kEeeMessageBytes), for the netlink device and its tests; null without
// libmnl. `family` is the ethtool genetlink family's id.
inline constexpr std::size_t kEeeMessageBytes = 512;
nlmsghdr *build_eee_set_message(void *buf, std::uint16_t family, std::uint32_t seq,
                                const std::string& device, const EeeSettings& settings);

// The backend's refusal for `error` from `device` (the interface named by
// --device) on `what` ("reading", "changing", "restoring"): names the device and
// what to do.
std::string eee_refusal(const std::string& device, const char *what, int error,
                        const std::string& detail);

// --device must be an interface name the kernel could have: 1 to 15
// bytes, no '/', ':' or blank. Empty when good, else why not.
std::string check_interface_name(const std::string& name);

// The backend over devices from `factory` (tests pass fakes). Reads the
// settings and checks, without changing them, that the kernel lets this
// process change them.
BackendResult make_ethtool_backend(const BackendConfig& config, const EeeDeviceFactory& factory);

// The EEE state file next to the service's socket: the settings an
// interface had before a service changed them, one line
//   ethtool DEV eee=on|off tx-lpi=on|off tx-timer-us=N
// under a comment naming the service's pid.
inline constexpr const char *kEeeStateFileSuffix = ".eee-state";
struct EeeStateLine {
    std::string device;
    EeeSettings original;
};
// The line of `text`; nullopt (with `why`) when there is none or it is bad.
std::optional<EeeStateLine> parse_eee_state(const std::string& text, std::string& why);
std::string format_eee_state(const EeeStateLine& line);

// Once the socket's folder is checked, before any client: what a service
// killed with the interface changed left at `path` is put back first, by
// `running` when it is the ethtool backend (which then keeps those as the
// settings to restore), else through a device of `factory` made for the
// purpose; a restore that fails is logged and the file stays for the next
// service. Then the ethtool backend takes `path` for its own record.
void use_eee_state_file(const std::string& path, LinkBackend& running,
                        const EeeDeviceFactory& factory = open_netlink_eee_device);

}  // namespace slim::link
