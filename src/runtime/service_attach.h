/* SPDX-License-Identifier: BSD-3-Clause */
// This process's link owner: the node's slimlinkd (UCX_SLIM_SERVICE) when
// one is reached, else the process itself, accounting an emulated link.
// Names the port a service drives for the process and says in the reports
// who drove it.
#ifndef SLIM_RUNTIME_SERVICE_ATTACH_H
#define SLIM_RUNTIME_SERVICE_ATTACH_H

#include "configuration.h"
#include "link/service_client.h"
#include "live/live_loop.h"

#include <memory>
#include <string>

namespace slim {

// The port a node service drives for this process: "emulated" for the
// emulated link (one per node: every local rank shares it, as ranks share
// an HCA port); for a real one, the first UCX_NET_DEVICES entry
// ("mlx5_0:1" -> "mlx5_0-1"), the name an administrator gives the system
// instance of that port (slimlinkd --port).
std::string service_port_name(const Config& config);

class ServiceAttachment {
public:
    // Attaches to the node's slimlinkd as `config` asks and points the
    // loop's backend (`lc`) at it; otherwise logs why the process keeps its
    // own emulated link. Throws only bad_alloc.
    void attach(const Config& config, live::LiveConfig& lc);

    // The service driving the port; null: the in-process emulated link.
    const std::shared_ptr<link::ServiceClient>& client() const noexcept { return client_; }
    explicit operator bool() const noexcept { return client_ != nullptr; }

    // The link a rank's drain paces itself by: a real port behind the
    // service wants its deadlines in time, an emulated one does not.
    bool port_emulated() const noexcept { return !client_ || client_->port_emulated(); }

    // For the reports: who drove the link, and the port and socket or why
    // no service.
    const char *owner() const noexcept { return client_ ? "slimlinkd" : "in-process"; }
    const std::string& owner_detail() const noexcept { return owner_detail_; }

    // Leaves the service, if attached. Never throws.
    void detach() noexcept
    {
        if (client_) {
            client_->detach();
        }
    }

private:
    void in_process(const Config& config, const std::string& why);

    std::shared_ptr<link::ServiceClient> client_;
    std::string owner_detail_;
};

}  // namespace slim

#endif
