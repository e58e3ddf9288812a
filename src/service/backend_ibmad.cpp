// SPDX-License-Identifier: BSD-3-Clause
// The "ibmad" backend: real InfiniBand through libibmad/libibumad. Reads the
// local port's PortInfo (LinkWidthSupported/Enabled/Active) and sets
// LinkWidthEnabled with an SMP Set(PortInfo) over directed route to itself.
//
// Honest limits — said in the init message too:
// - Standard IB hardware applies LinkWidthEnabled only when the link
//   renegotiates (retrains: port bounce, cable event), which takes
//   milliseconds to seconds and stops traffic meanwhile. The thesis's
//   microsecond width changes (tau = 10 us) need hardware dynamic width
//   support; on ordinary HCAs this backend sets the policy the next training
//   will use, it does not save power on its own.
// - It needs read/write access to /dev/infiniband/umad* (root, or a udev
//   rule), and an SM that does not overwrite PortInfo on its next sweep.
// Without hardware or permission, make_backend fails with one clear error;
// the controller then keeps the real link at full width and the emulated
// accounting goes on (make_backend_or_emulated).
#include "service/backend_ibmad.h"

#include "service/backend_registry.h"

#include "slimlink_config.h"

#ifdef HAVE_IBMAD
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#endif

#include <array>
#include <cstring>
#include <unistd.h>

namespace slim::link {

namespace ib {

std::uint8_t width_bit(unsigned lanes)
{
    switch (lanes) {
    case 1: return 1;
    case 2: return 16;  // 2x was added in IBA 1.3 as bit 4
    case 4: return 2;
    case 8: return 4;
    case 12: return 8;
    default: return 0;
    }
}

unsigned widest(std::uint8_t mask)
{
    for (const unsigned lanes : {12u, 8u, 4u, 2u, 1u}) {
        if (mask & width_bit(lanes)) {
            return lanes;
        }
    }
    return 0;
}

void set_link_width_enabled(std::uint8_t *portinfo, std::uint8_t value)
{
    portinfo[kLinkWidthEnabledByte] = value;
}
std::uint8_t link_width_enabled(const std::uint8_t *portinfo)
{
    return portinfo[kLinkWidthEnabledByte];
}
std::uint8_t link_width_supported(const std::uint8_t *portinfo)
{
    return portinfo[kLinkWidthSupportedByte];
}
std::uint8_t link_width_active(const std::uint8_t *portinfo)
{
    return portinfo[kLinkWidthActiveByte];
}

}  // namespace ib

#ifndef HAVE_IBMAD

BackendResult make_ibmad_backend(const BackendConfig& /*config*/)
{
    return {nullptr,
            Status::error("ibmad link backend: not built with libibmad (install the Debian "
                          "packages libibmad-dev libibumad-dev and rerun configure)")};
}

#else

namespace {

constexpr unsigned kTimeoutMs = 100;

// RAII for the umad port that libibmad opens.
struct MadPortCloser {
    void operator()(ibmad_port *p) const { mad_rpc_close_port(p); }
};
using MadPort = std::unique_ptr<ibmad_port, MadPortCloser>;

class IbmadBackend final : public LinkBackend {
public:
    IbmadBackend(MadPort port, std::string device, unsigned port_num,
                 const std::array<std::uint8_t, IB_SMP_DATA_SIZE>& portinfo)
        : port_(std::move(port)), device_(std::move(device)), port_num_(port_num),
          original_enabled_(ib::link_width_enabled(portinfo.data())),
          supported_(ib::link_width_supported(portinfo.data())), full_(ib::widest(supported_))
    {}

    std::string name() const override { return "ibmad"; }
    unsigned full_width() const override { return full_; }
    std::string describe() const override
    {
        return "ibmad link backend on " + device_ + " port " + std::to_string(port_num_) +
               ": sets PortInfo LinkWidthEnabled (supported mask " + std::to_string(supported_) +
               "); standard InfiniBand hardware applies it only when the link renegotiates, "
               "so width changes take effect at the next link training, not within tau";
    }

    Status set_width(unsigned width) override
    {
        // Full width restores what the port had enabled before us.
        const std::uint8_t value = width >= full_ ? original_enabled_ : ib::width_bit(width);
        if (value == 0 || (value != original_enabled_ && !(value & supported_))) {
            return Status::error("ibmad link backend: width " + std::to_string(width) +
                                 "x is not supported by " + device_ + " port " +
                                 std::to_string(port_num_));
        }
        std::array<std::uint8_t, IB_SMP_DATA_SIZE> data{};
        ib_portid_t self{};  // lid 0, empty path: directed route to ourselves
        if (!smp_query_via(data.data(), &self, IB_ATTR_PORT_INFO, port_num_, kTimeoutMs,
                           port_.get())) {
            return Status::error("ibmad link backend: PortInfo query on " + device_ + " failed");
        }
        // No port/phys state change; only the enabled width.
        mad_set_field(data.data(), 0, IB_PORT_STATE_F, 0);
        mad_set_field(data.data(), 0, IB_PORT_PHYS_STATE_F, 0);
        ib::set_link_width_enabled(data.data(), value);
        if (!smp_set_via(data.data(), &self, IB_ATTR_PORT_INFO, port_num_, kTimeoutMs,
                         port_.get())) {
            return Status::error("ibmad link backend: PortInfo set (LinkWidthEnabled=" +
                                 std::to_string(value) + ") on " + device_ + " failed");
        }
        return Status::success();
    }

private:
    MadPort port_;
    std::string device_;
    unsigned port_num_;
    std::uint8_t original_enabled_;
    std::uint8_t supported_;
    unsigned full_;
};

}  // namespace

BackendResult make_ibmad_backend(const BackendConfig& config)
{
    auto fail = [](const std::string& why) {
        return BackendResult{nullptr, Status::error("ibmad link backend: " + why)};
    };
    // Checked first: without it libibumad prints its own warnings to stderr
    // (and still "finds" a device), which would bury the one clear error.
    if (::access("/sys/class/infiniband_mad/abi_version", R_OK) != 0) {
        return fail("no InfiniBand management interface (/sys/class/infiniband_mad is "
                    "missing: no HCA, or the ib_umad kernel module is not loaded)");
    }
    if (umad_init() < 0) {
        return fail("umad_init failed (is the ib_umad kernel module loaded?)");
    }
    char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
    const int count = umad_get_cas_names(names, UMAD_MAX_DEVICES);
    if (count <= 0) {
        return fail("no InfiniBand device found (umad lists none)");
    }
    std::string device = config.device;
    if (const auto colon = device.find(':'); colon != std::string::npos) {
        device.resize(colon);  // UCX names devices "mlx5_0:1"
    }
    if (device.empty()) {
        device = names[0];
    }
    madrpc_show_errors(0);
    const int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS};
    MadPort port(mad_rpc_open_port(device.data(), static_cast<int>(config.port),
                                   const_cast<int *>(classes), 2));
    if (!port) {
        return fail("cannot open " + device + " port " + std::to_string(config.port) +
                    " (needs read/write access to /dev/infiniband/umad*)");
    }
    std::array<std::uint8_t, IB_SMP_DATA_SIZE> portinfo{};
    ib_portid_t self{};
    if (!smp_query_via(portinfo.data(), &self, IB_ATTR_PORT_INFO, config.port, kTimeoutMs,
                       port.get())) {
        return fail("PortInfo query on " + device + " port " + std::to_string(config.port) +
                    " failed");
    }
    if (ib::widest(ib::link_width_supported(portinfo.data())) == 0) {
        return fail("PortInfo of " + device + " reports no supported width");
    }
    return {std::make_unique<IbmadBackend>(std::move(port), device, config.port, portinfo),
            Status::success()};
}

#endif

}  // namespace slim::link
