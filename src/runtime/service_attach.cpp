// SPDX-License-Identifier: BSD-3-Clause
#include "service_attach.h"

#include "base/error.h"
#include "base/log.h"
#include "env.h"
#include "link/tee_backend.h"
#include "predict/link_profile.h"
#include "process_identity.h"

#include <cstdio>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

namespace slim {

std::string service_port_name(const Config& config)
{
    if (config.link == LinkBackendKind::emulated) {
        return "emulated";
    }
    const std::optional<std::string> devices = process_environment()("UCX_NET_DEVICES");
    std::string first = devices ? devices->substr(0, devices->find(',')) : std::string();
    if (first.empty() || first == "all") {
        return "default";
    }
    for (char& c : first) {
        c = c == ':' ? '-' : c;
    }
    return link::service_port_name(first);
}

void ServiceAttachment::in_process(const Config& config, const std::string& why)
{
    owner_detail_ = why;
    if (config.link != LinkBackendKind::emulated) {
        logger().warn("{}={} drives a port only through the node service slimlinkd, and "
                      "none was reached ({}): this process accounts an emulated link and "
                      "the port stays as it is",
                      Config::link_var, to_string(config.link), why);
    } else {
        logger().info("no node service: {}; this process accounts its own emulated link", why);
    }
}

void ServiceAttachment::attach(const Config& config, live::LiveConfig& lc)
{
    // Real backends run only in the service (the one owner of a port).
    lc.backend_name = "emulated";
    if (config.service.kind == ServiceChoice::Kind::off) {
        return in_process(config, std::string(Config::service_var) + "=off");
    }
    const ProcessIdentity& who = this_process();
    link::service::AttachRequest request;
    // 0: any port will do (the service's profile is then the rank's); a
    // profile the user chose must match the service's port.
    request.full_width = config.link_profile_set ? lc.backend.link.lanes : 0;
    request.rank       = who.rank;
    request.pid        = who.pid;
    if (who.local.known()) {
        request.local_rank = who.local.local_rank;
        request.local_size = who.local.local_size;
    }
    // A process outside a known launcher is a job of its own.
    const std::string job = who.local.known() ? who.local.key : "pid" + std::to_string(who.pid);
    std::snprintf(request.job_key, sizeof request.job_key, "%s", job.c_str());
    const std::string port = service_port_name(config);
    const auto connect     = [&] {
        if (config.service.kind == ServiceChoice::Kind::path) {
            // A socket that root owns is a system instance: trusted as one.
            struct stat st {};
            const bool system = ::stat(config.service.path.c_str(), &st) == 0 && st.st_uid == 0 &&
                                ::geteuid() != 0;
            return link::ServiceClient::connect(config.service.path, system, request);
        }
        return link::ServiceClient::connect_any(port, request);
    };
    try {
        try {
            client_ = std::shared_ptr<link::ServiceClient>(connect());
        } catch (const link::ServiceError& e) {
            // A service older than link profiles takes no "any port" (0):
            // it is asked again for the lanes this process models.
            if (request.full_width != 0 ||
                std::string(e.what()).find("expects a port of 0 lanes") == std::string::npos) {
                throw;
            }
            request.full_width = lc.backend.link.lanes;
            client_            = std::shared_ptr<link::ServiceClient>(connect());
        }
    } catch (const link::ServiceError& e) {
        return in_process(config, e.what());
    }
    const link::service::AttachReply& info = client_->info();
    lc.backend.link.lanes                  = info.full_width;
    lc.backend.link.low_width              = info.low_width;
    lc.backend.link.tau_ns                 = info.tau_ns;
    lc.backend.link.lane_watts             = info.lane_watts;
    if (!client_->link_spec().empty()) {
        // The whole profile (an EEE port's sleep time, the low width's
        // power): the rank's own model is then the service's.
        try {
            const link::LinkConfig spec = link::parse_link_config(client_->link_spec());
            if (spec.lanes == info.full_width && spec.low_width == info.low_width) {
                if (config.link_profile_set &&
                    link::link_spec(spec) != link::link_spec(config.link_profile)) {
                    logger().warn("the node service drives the port as '{}', not as {}='{}': "
                                  "its profile is the one modelled",
                                  client_->link_spec(), Config::link_profile_var,
                                  link::link_spec(config.link_profile));
                }
                lc.backend.link = spec;
            } else {
                logger().warn("slimlinkd's link profile '{}' disagrees with its attach reply "
                              "({} lanes, low {}); using the reply's",
                              client_->link_spec(), info.full_width, info.low_width);
            }
        } catch (const Error& e) {
            logger().warn("slimlinkd's link profile '{}' is not one this library reads ({}); "
                          "using its attach reply's lanes, low width and tau",
                          client_->link_spec(), e.what());
        }
    }
    // The port is the service's; the rank also models its own demand
    // alone (link/tee_backend.h), which its trace replays to.
    lc.backend_factory = [client = client_](const link::BackendConfig& c) {
        std::unique_ptr<link::LinkBackend> demand = link::make_emulated_backend(c).backend;
        return std::make_unique<link::TeeBackend>(link::make_service_backend(client, c.clock),
                                                  std::move(demand));
    };
    owner_detail_ = "port " + link::service::text_of(info.port) + ", " +
                    link::service::text_of(info.backend) + ", socket " + client_->socket_path();
    logger().debug("link driven by slimlinkd: {}", owner_detail_);
}

}  // namespace slim
