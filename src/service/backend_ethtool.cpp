// SPDX-License-Identifier: BSD-3-Clause
// The "ethtool" backend (backend_ethtool.h): Ethernet EEE of one interface.
//
// - Nothing changes at the start: the settings are read, and the same
//   settings are written back as a probe. The kernel changes nothing for a
//   request that changes nothing, but checks first that the driver can set
//   EEE (EOPNOTSUPP) and that we may (EPERM without CAP_NET_ADMIN), so a
//   backend that starts can act.
// - The port rests at the site's settings. Width 1 before any width 0
//   (the service's full width at its start and on a client's attach)
//   leaves them as they are: the PHY's own timer guards the first
//   communication phase; after a width 0 it holds TX LPI off.
// - Before the first change the settings found are written to the EEE
//   state file, and it is removed once they are back (release(), restore):
//   a service killed meanwhile leaves it for the next one.
#include "service/backend_ethtool.h"

#include "base/log.h"
#include "service/backend_registry.h"
#include "service/state_file.h"
#include "trace/trace.h"

#include <cerrno>
#include <cstring>
#include <sstream>
#include <unistd.h>

namespace slim::link {

namespace {

const char *on_off(bool b) { return b ? "on" : "off"; }

}  // namespace

std::string describe(const EeeSettings& s)
{
    return std::string("eee ") + on_off(s.enabled) + ", tx-lpi " + on_off(s.tx_lpi_enabled) +
           ", tx-timer " + std::to_string(s.timer_us) + " us";
}

std::string check_interface_name(const std::string& name)
{
    // The kernel's dev_valid_name(): IFNAMSIZ is 16 with the NUL.
    if (name.empty() || name.size() > 15) {
        return "--device '" + name + "': an interface name has 1 to 15 characters";
    }
    if (name == "." || name == "..") {
        return "--device '" + name + "' is not an interface name";
    }
    for (const char c : name) {
        if (c == '/' || c == ':' || c <= ' ' || c == 0x7f) {
            return "--device '" + predict::escape_for_message(name, name.size()) +
                   "': an interface name has no '/', ':', blank or control character";
        }
    }
    return {};
}

std::string eee_refusal(const std::string& device, const char *what, int error,
                        const std::string& detail)
{
    const std::string kernel = std::string("the kernel answers '") + std::strerror(error) + "'" +
                               (detail.empty() ? std::string() : " (" + detail + ")");
    const std::string head = "ethtool link backend: ";
    switch (error) {
    case EOPNOTSUPP:
        return head + device + " has no Energy-Efficient Ethernet control: " + kernel + " to " +
               what +
               " its EEE settings; its driver implements none (virtio, veth, dummy and "
               "lo do not); choose an Ethernet interface whose 'ethtool --show-eee " +
               device + "' works, or another --link";
    case ENODEV:
        return head + "there is no network interface '" + device +
               "' (--device; 'ip link' lists them): " + kernel;
    case EPERM:
    case EACCES:
        return head + "changing the EEE settings of " + device + " needs CAP_NET_ADMIN: " + kernel +
               "; run slimlinkd as root (a --system instance) or give it "
               "CAP_NET_ADMIN";
    default: return head + what + " the EEE settings of " + device + " failed: " + kernel;
    }
}

// ------------------------------------------------------------------ state file

std::string format_eee_state(const EeeStateLine& line)
{
    return "ethtool " + line.device + " eee=" + on_off(line.original.enabled) +
           " tx-lpi=" + on_off(line.original.tx_lpi_enabled) +
           " tx-timer-us=" + std::to_string(line.original.timer_us);
}

std::optional<EeeStateLine> parse_eee_state(const std::string& text, std::string& why)
{
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        std::istringstream words(line);
        std::string kind, device, eee, lpi, timer, extra;
        words >> kind >> device >> eee >> lpi >> timer;
        const auto flag = [](const std::string& word, const char *key, bool& out) {
            const std::string prefix = std::string(key) + "=";
            if (word == prefix + "on" || word == prefix + "off") {
                out = word == prefix + "on";
                return true;
            }
            return false;
        };
        EeeStateLine parsed;
        parsed.device         = device;
        const bool good_kind  = kind == "ethtool" && check_interface_name(device).empty();
        const bool good_flags = flag(eee, "eee", parsed.original.enabled) &&
                                flag(lpi, "tx-lpi", parsed.original.tx_lpi_enabled);
        const std::string timer_key = "tx-timer-us=";
        bool good_timer = timer.rfind(timer_key, 0) == 0 && timer.size() > timer_key.size() &&
                          timer.size() <= timer_key.size() + 10;
        std::uint64_t us = 0;
        for (std::size_t i = timer_key.size(); good_timer && i < timer.size(); ++i) {
            good_timer = timer[i] >= '0' && timer[i] <= '9';
            us         = us * 10 + static_cast<unsigned>(timer[i] - '0');
        }
        good_timer = good_timer && us <= UINT32_MAX;
        if (!good_kind || !good_flags || !good_timer || (words >> extra)) {
            why = "the line '" + predict::escape_for_message(line, 200) +
                  "' is not 'ethtool DEV eee=on|off tx-lpi=on|off tx-timer-us=N'";
            return std::nullopt;
        }
        parsed.original.timer_us = static_cast<std::uint32_t>(us);
        return parsed;
    }
    why = "it names no interface";
    return std::nullopt;
}

// ------------------------------------------------------------------ backend

namespace {

class EthtoolBackend final : public LinkBackend {
public:
    EthtoolBackend(std::string device_name, std::unique_ptr<EeeDevice> device, EeeSettings original,
                   std::optional<std::uint32_t> timer_us)
        : name_(std::move(device_name)), device_(std::move(device)), original_(original),
          timer_us_(timer_us)
    {}

    ~EthtoolBackend() override { (void)restore_full_width(); }

    std::string name() const override { return "ethtool"; }
    unsigned full_width() const override { return 1; }
    std::string describe() const override
    {
        std::string text =
                "ethtool link backend: Energy-Efficient Ethernet of " + name_ +
                " through ethtool netlink; found " + slim::link::describe(original_) +
                "; width 0: tx-lpi on, tx-timer " +
                (timer_us_ ? std::to_string(*timer_us_) + " us" : std::string("as found")) +
                "; width 1: tx-lpi off; no client: as found; EEE advertisement is never "
                "changed";
        if (!original_.enabled) {
            text += "; EEE is not enabled on " + name_ + " (ethtool --set-eee " + name_ +
                    " eee on): TX LPI switching saves nothing until it is";
        }
        return text;
    }

    Status set_width(unsigned width) override
    {
        if (width > 1) {
            return Status::error("ethtool link backend: width " + std::to_string(width) + " for " +
                                 name_ + ": an EEE port takes 0 (low-power idle) or 1 (active)");
        }
        if (width == 1 && resting_) {
            return Status::success();  // the site's settings hold until a first idle
        }
        EeeSettings want    = original_;
        want.timer_us       = timer_us_.value_or(original_.timer_us);
        want.tx_lpi_enabled = width == 0;
        if (!resting_ && want == applied_) {
            return Status::success();
        }
        if (!state_.written()) {
            // Before the change: a service killed from here on leaves the
            // settings to put back for the next one.
            state_.write("# slimlinkd pid " + std::to_string(::getpid()) +
                         " --link ethtool: the EEE settings before it changed them\n" +
                         format_eee_state({name_, original_}));
        }
        dirty_                 = true;
        resting_               = false;
        const EeeResult result = device_->set(want);
        if (result.error != 0) {
            return Status::error(eee_refusal(name_, "changing", result.error, result.detail));
        }
        applied_ = want;
        return Status::success();
    }

    Status release() override { return restore_full_width(); }

    Status restore_full_width() override
    {
        if (!dirty_) {
            resting_ = true;
            return Status::success();
        }
        const EeeResult result = device_->set(original_);
        if (result.error != 0) {
            return Status::error(eee_refusal(name_, "restoring", result.error, result.detail) +
                                 "; wanted " + slim::link::describe(original_));
        }
        // What the driver reports, not what was asked: a restore is what
        // removes the state file, and a driver may take a request and keep
        // something else.
        const EeeResult now = device_->get();
        if (now.error != 0) {
            return Status::error(eee_refusal(name_, "reading back", now.error, now.detail));
        }
        if (now.settings.tx_lpi_enabled != original_.tx_lpi_enabled ||
            now.settings.timer_us != original_.timer_us) {
            return Status::error("ethtool link backend: " + name_ + " reports " +
                                 slim::link::describe(now.settings) + " after restoring " +
                                 slim::link::describe(original_));
        }
        dirty_   = false;
        resting_ = true;
        state_.remove();
        return Status::success();
    }

    const std::string& device_name() const { return name_; }

    // A previous service's record for this interface: those are the site's
    // settings, whatever the interface has now.
    Status adopt(const EeeSettings& left)
    {
        original_ = left;
        dirty_    = true;
        return restore_full_width();
    }
    void use_path(const std::string& path) { state_.set_path(path); }

private:
    std::string name_;
    std::unique_ptr<EeeDevice> device_;
    EeeSettings original_;
    std::optional<std::uint32_t> timer_us_;
    EeeSettings applied_;
    bool resting_ = true;   // at the site's settings (nothing applied since)
    bool dirty_   = false;  // the interface may differ from original_
    StateFile state_;
};

}  // namespace

BackendResult make_ethtool_backend(const BackendConfig& config, const EeeDeviceFactory& factory)
{
    const auto fail = [](const std::string& why) {
        return BackendResult{nullptr, Status::error(why)};
    };
    if (config.device.empty()) {
        return fail("ethtool link backend: --device IFNAME is required (the Ethernet interface "
                    "whose EEE it switches, e.g. eth0)");
    }
    if (const std::string bad = check_interface_name(config.device); !bad.empty()) {
        return fail("ethtool link backend: " + bad);
    }
    std::string why;
    std::unique_ptr<EeeDevice> device = factory(config.device, why);
    if (!device) {
        return fail("ethtool link backend: " + why);
    }
    const EeeResult found = device->get();
    if (found.error != 0) {
        return fail(eee_refusal(config.device, "reading", found.error, found.detail));
    }
    // Changes nothing (the same values), but the kernel checks the driver's
    // set_eee and our CAP_NET_ADMIN first.
    const EeeResult probe = device->set(found.settings);
    if (probe.error != 0) {
        return fail(eee_refusal(config.device, "changing", probe.error, probe.detail));
    }
    if (config.link.lanes != 1) {
        return fail("ethtool link backend: an EEE port has one lane, active (1) or in low-power "
                    "idle (0); --link-config L=" +
                    std::to_string(config.link.lanes) + " does not describe it");
    }
    return {std::make_unique<EthtoolBackend>(config.device, std::move(device), found.settings,
                                             config.eee_timer_us),
            Status::success()};
}

BackendResult make_ethtool_backend(const BackendConfig& config)
{
    if (!netlink_eee_built()) {
        return {nullptr, Status::error("ethtool link backend: not built with libmnl (install the "
                                       "Debian package 'libmnl-dev' and rebuild)")};
    }
    return make_ethtool_backend(config, open_netlink_eee_device);
}

void use_eee_state_file(const std::string& path, LinkBackend& running,
                        const EeeDeviceFactory& factory)
{
    auto *const ethtool                   = dynamic_cast<EthtoolBackend *>(&running);
    const std::optional<std::string> text = read_state_file_text(path, 4096);
    if (!text) {
        if (ethtool) {
            ethtool->use_path(path);
        }
        return;
    }
    std::string why;
    const std::optional<EeeStateLine> left = parse_eee_state(*text, why);
    if (!left) {
        logger().error("slimlinkd: EEE state file {}: {}; left as it is", path, why);
        if (ethtool) {
            logger().warn("slimlinkd: the ethtool backend records nothing while {} is there", path);
        }
        return;
    }
    const std::string was = describe(left->original);
    logger().warn("slimlinkd: a previous slimlinkd left the EEE settings of {} changed (state "
                  "file {}); putting back {}",
                  left->device, path, was);
    if (ethtool && ethtool->device_name() == left->device) {
        ethtool->use_path(path);
        const Status status = ethtool->adopt(left->original);
        if (status) {
            logger().info("slimlinkd: {} is back at {}", left->device, was);
        } else {
            logger().error("slimlinkd: {}; the file stays, and this service retries at its "
                           "next restore",
                           status.message());
        }
        return;
    }
    std::unique_ptr<EeeDevice> device = factory(left->device, why);
    EeeResult result;
    if (!device) {
        result.error  = EINVAL;
        result.detail = why;
    } else {
        result = device->set(left->original);
    }
    if (result.error != 0) {
        logger().error("slimlinkd: {}; the state file {} stays for a service that can",
                       device ? eee_refusal(left->device, "restoring", result.error, result.detail)
                              : "ethtool link backend: " + why,
                       path);
        if (ethtool) {
            logger().warn("slimlinkd: the ethtool backend records nothing while {} is there", path);
        }
        return;
    }
    logger().info("slimlinkd: {} is back at {}", left->device, was);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        logger().warn("slimlinkd: removing {}: {}", path, std::strerror(errno));
    }
    if (ethtool) {
        ethtool->use_path(path);
    }
}

}  // namespace slim::link
