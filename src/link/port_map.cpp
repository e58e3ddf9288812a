// SPDX-License-Identifier: BSD-3-Clause
#include "link/port_map.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <hwloc.h>
#include <net/if.h>

namespace slim::link {

namespace {

std::string join_names(const std::vector<std::string>& names)
{
    if (names.empty()) {
        return "none";
    }
    std::string out;
    for (const auto& n : names) {
        out += (out.empty() ? "" : ", ") + n;
    }
    return out;
}

bool is_osdev(hwloc_obj_t obj, hwloc_obj_osdev_type_t type)
{
    return obj->type == HWLOC_OBJ_OS_DEVICE && obj->attr->osdev.type == type;
}

}  // namespace

struct PortMap::Impl {
    hwloc_topology_t topo = nullptr;

    ~Impl()
    {
        if (topo != nullptr) {
            hwloc_topology_destroy(topo);
        }
    }

    hwloc_obj_t find_osdev(const std::string& name, hwloc_obj_osdev_type_t type) const
    {
        for (hwloc_obj_t obj = hwloc_get_next_osdev(topo, nullptr); obj != nullptr;
             obj = hwloc_get_next_osdev(topo, obj)) {
            if (is_osdev(obj, type) && obj->name != nullptr && name == obj->name) {
                return obj;
            }
        }
        return nullptr;
    }

    std::vector<std::string> osdev_names(hwloc_obj_osdev_type_t type) const
    {
        std::vector<std::string> names;
        for (hwloc_obj_t obj = hwloc_get_next_osdev(topo, nullptr); obj != nullptr;
             obj = hwloc_get_next_osdev(topo, obj)) {
            if (is_osdev(obj, type) && obj->name != nullptr) {
                names.emplace_back(obj->name);
            }
        }
        return names;
    }

    // An OpenFabrics device on the same PCI function as a netdev (IPoIB).
    hwloc_obj_t ib_sibling(hwloc_obj_t netdev) const
    {
        for (hwloc_obj_t obj = hwloc_get_next_osdev(topo, nullptr); obj != nullptr;
             obj = hwloc_get_next_osdev(topo, obj)) {
            if (is_osdev(obj, HWLOC_OBJ_OSDEV_OPENFABRICS) && obj->parent == netdev->parent &&
                netdev->parent != nullptr && netdev->parent->type == HWLOC_OBJ_PCI_DEVICE) {
                return obj;
            }
        }
        return nullptr;
    }

    void fill_locality(hwloc_const_cpuset_t set, PortInfo& info) const
    {
        const int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
        const int pus   = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_PU);
        info.local_cores = cores > 0 ? static_cast<unsigned>(cores) : 0;
        info.local_pus   = pus > 0 ? static_cast<unsigned>(pus) : 0;
        char* text = nullptr;
        if (hwloc_bitmap_list_asprintf(&text, set) >= 0 && text != nullptr) {
            info.local_cpuset = text;
        }
        std::free(text);
    }

    void fill_locality(hwloc_obj_t osdev, PortInfo& info) const
    {
        const hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topo, osdev);
        fill_locality(near != nullptr && near->cpuset != nullptr
                          ? near->cpuset
                          : hwloc_topology_get_complete_cpuset(topo),
                      info);
    }
};

PortMap::PortMap() : impl_(std::make_unique<Impl>())
{
    if (hwloc_topology_init(&impl_->topo) != 0) {
        impl_->topo = nullptr;
        throw PortMapError(std::string("port map: hwloc_topology_init failed: ") +
                           std::strerror(errno));
    }
    // OpenFabrics and network OS devices are "important" I/O objects.
    hwloc_topology_set_io_types_filter(impl_->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(impl_->topo) != 0) {
        throw PortMapError(std::string("port map: hwloc_topology_load failed: ") +
                           std::strerror(errno));
    }
}

PortMap::~PortMap() = default;
PortMap::PortMap(PortMap&&) noexcept = default;
PortMap& PortMap::operator=(PortMap&&) noexcept = default;

std::vector<std::string> PortMap::openfabrics_devices() const
{
    return impl_->osdev_names(HWLOC_OBJ_OSDEV_OPENFABRICS);
}

std::vector<std::string> PortMap::network_devices() const
{
    return impl_->osdev_names(HWLOC_OBJ_OSDEV_NETWORK);
}

unsigned PortMap::machine_cores() const
{
    const int n = hwloc_get_nbobjs_by_type(impl_->topo, HWLOC_OBJ_CORE);
    return n > 0 ? static_cast<unsigned>(n) : 0;
}

PortInfo PortMap::resolve(const std::string& ucx_device) const
{
    if (ucx_device.empty()) {
        throw PortMapError("port map: empty UCX device name");
    }
    PortInfo info;
    info.ucx_device = ucx_device;

    // UCX names IB ports "<device>:<port>" (mlx5_0:1); tcp uses the netdev.
    const auto colon = ucx_device.rfind(':');
    if (colon != std::string::npos) {
        const std::string device = ucx_device.substr(0, colon);
        const std::string number = ucx_device.substr(colon + 1);
        if (hwloc_obj_t ib = impl_->find_osdev(device, HWLOC_OBJ_OSDEV_OPENFABRICS)) {
            char* end = nullptr;
            const unsigned long port = std::strtoul(number.c_str(), &end, 10);
            if (number.empty() || *end != '\0' || port == 0 || port > 255) {
                throw PortMapError("port map: '" + ucx_device + "': port '" + number +
                                   "' is not a number in 1..255");
            }
            // hwloc's Linux backend records PortNState for every port of the HCA.
            const std::string key = "Port" + std::to_string(port) + "State";
            if (hwloc_obj_get_info_by_name(ib, key.c_str()) == nullptr) {
                throw PortMapError("port map: '" + ucx_device + "': device " + device +
                                   " has no port " + std::to_string(port));
            }
            info.device = device;
            info.port   = static_cast<unsigned>(port);
            info.is_ib  = true;
            impl_->fill_locality(ib, info);
            return info;
        }
    }

    info.device = ucx_device;
    if (hwloc_obj_t net = impl_->find_osdev(ucx_device, HWLOC_OBJ_OSDEV_NETWORK)) {
        info.no_ib_reason = "no IB port: " + ucx_device + " is a network device (tcp)";
        if (hwloc_obj_t ib = impl_->ib_sibling(net)) {
            info.no_ib_reason += std::string("; it is IPoIB on ") + ib->name +
                                 ", use the UCX device " + ib->name + ":<port> for width control";
        }
        impl_->fill_locality(net, info);
        return info;
    }
    if (hwloc_obj_t ib = impl_->find_osdev(ucx_device, HWLOC_OBJ_OSDEV_OPENFABRICS)) {
        throw PortMapError("port map: '" + ucx_device + "' is an OpenFabrics device without a "
                           "port; UCX names its ports " + ib->name + ":1, " + ib->name + ":2, ...");
    }
    // hwloc lists only netdevs behind a PCI device; lo, bridges, veth and
    // tunnels exist only as kernel interfaces. Their locality is the machine.
    if (if_nametoindex(ucx_device.c_str()) != 0) {
        info.no_ib_reason = "no IB port: " + ucx_device + " is a virtual network device (tcp)";
        impl_->fill_locality(hwloc_topology_get_complete_cpuset(impl_->topo), info);
        return info;
    }
    throw PortMapError("port map: unknown device '" + ucx_device +
                       "': not an OpenFabrics port (known: " + join_names(openfabrics_devices()) +
                       ") nor a network interface (hwloc knows: " +
                       join_names(network_devices()) + ")");
}

}  // namespace slim::link
