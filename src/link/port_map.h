/* SPDX-License-Identifier: BSD-3-Clause */
// Maps a UCX device name to the port it drives, with hwloc (thesis §4.5.4:
// the node service needs to know which local processes share a port).
//   "mlx5_0:1" -> OpenFabrics device mlx5_0, port 1 (an IB port: width control)
//   "eth0", "lo" (UCX tcp) -> a network device: no IB port, reported cleanly
// and an unknown device -> PortMapError naming it.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace slim::link {

class PortMapError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct PortInfo {
    std::string ucx_device;   // as given: "mlx5_0:1", "eth0"
    std::string device;       // "mlx5_0", "eth0"
    unsigned    port  = 0;    // IB port number (1-based); 0 without an IB port
    bool        is_ib = false;
    // Why there is no IB port to control ("eth0 is a network device (tcp) ...").
    std::string no_ib_reason;
    // Cores and hardware threads near the device (its non-I/O hwloc ancestor;
    // the whole machine for virtual devices such as lo): the local processes
    // that may share the port run there.
    unsigned    local_cores = 0;
    unsigned    local_pus   = 0;
    std::string local_cpuset;  // hwloc list syntax, e.g. "0-15"
};

// The node's topology, loaded once with I/O devices (OS devices of type
// OPENFABRICS and NETWORK). Not copyable; moving is fine.
class PortMap {
public:
    PortMap();  // throws PortMapError if hwloc cannot load the topology
    ~PortMap();
    PortMap(PortMap&&) noexcept;
    PortMap& operator=(PortMap&&) noexcept;
    PortMap(const PortMap&) = delete;
    PortMap& operator=(const PortMap&) = delete;

    // Throws PortMapError for a malformed name, an unknown device or a port
    // the device does not have.
    PortInfo resolve(const std::string& ucx_device) const;

    // OS device names hwloc found, for error messages and diagnostics.
    std::vector<std::string> openfabrics_devices() const;
    std::vector<std::string> network_devices() const;

    unsigned machine_cores() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace slim::link
