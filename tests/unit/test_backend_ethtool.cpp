// SPDX-License-Identifier: BSD-3-Clause
// The ethtool link backend (service/backend_ethtool.h) over a fake
// interface: width 0 and 1 switch TX LPI only, every way back puts the
// settings found at the start back exactly, refusals name the interface
// and what to do, the EEE state file records the settings before the first
// change, and the EEE_SET message the netlink device sends carries the
// right attributes (read back with libmnl). The netlink device itself is
// asked about lo and an interface that does not exist: the kernel's own
// refusals.
#include "link/backend.h"
#include "link/service_protocol.h"
#include "service/backend_ethtool.h"
#include "service/backend_registry.h"
#include "service/port_service.h"

#include "slimlink_config.h"

#include <catch2/catch.hpp>

#ifdef HAVE_LIBMNL
#include <libmnl/libmnl.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using Catch::Matchers::Contains;
using namespace slim::link;

namespace {

// What a fake interface holds and was asked.
struct FakeNic {
    EeeSettings now;
    int get_error = 0;
    int set_error = 0;
    std::string detail;
    std::vector<EeeSettings> sets;  // every set asked, as asked
};

class FakeEee final : public EeeDevice {
public:
    explicit FakeEee(std::shared_ptr<FakeNic> nic) : nic_(std::move(nic)) {}
    EeeResult get() override
    {
        if (nic_->get_error != 0) {
            return {nic_->get_error, nic_->detail, {}};
        }
        return {0, {}, nic_->now};
    }
    EeeResult set(const EeeSettings& s) override
    {
        nic_->sets.push_back(s);
        if (nic_->set_error != 0) {
            return {nic_->set_error, nic_->detail, s};
        }
        // As the netlink device: the advertisement is never written.
        nic_->now.tx_lpi_enabled = s.tx_lpi_enabled;
        nic_->now.timer_us       = s.timer_us;
        return {0, {}, s};
    }

private:
    std::shared_ptr<FakeNic> nic_;
};

// Fake interfaces by name; an unknown name is refused as the kernel does.
struct FakeNics {
    std::map<std::string, std::shared_ptr<FakeNic>> nics;

    std::shared_ptr<FakeNic> add(const std::string& name, EeeSettings s)
    {
        auto nic   = std::make_shared<FakeNic>();
        nic->now   = s;
        nics[name] = nic;
        return nic;
    }
    EeeDeviceFactory factory()
    {
        return [this](const std::string& name, std::string&) -> std::unique_ptr<EeeDevice> {
            auto it = nics.find(name);
            if (it == nics.end()) {
                auto missing       = std::make_shared<FakeNic>();
                missing->get_error = ENODEV;
                missing->set_error = ENODEV;
                return std::make_unique<FakeEee>(missing);
            }
            return std::make_unique<FakeEee>(it->second);
        };
    }
};

EeeSettings eee(bool enabled, bool lpi, std::uint32_t timer_us)
{
    EeeSettings s;
    s.enabled        = enabled;
    s.tx_lpi_enabled = lpi;
    s.timer_us       = timer_us;
    return s;
}

BackendConfig eee_port(const std::string& device             = "eth0",
                       std::optional<std::uint32_t> timer_us = std::nullopt)
{
    BackendConfig config;
    config.link.lanes   = 1;
    config.device       = device;
    config.eee_timer_us = timer_us;
    return config;
}

std::unique_ptr<LinkBackend> make(FakeNics& nics, const BackendConfig& config)
{
    BackendResult r = make_ethtool_backend(config, nics.factory());
    INFO(r.status.message());
    REQUIRE(r.status);
    REQUIRE(r.backend);
    return std::move(r.backend);
}

struct TempDir {
    std::string path;
    TempDir()
    {
        char tmpl[] = "/tmp/slim-eee-XXXXXX";
        path        = ::mkdtemp(tmpl);
    }
    ~TempDir() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
};

bool exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

std::string read_all(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("ethtool: width 0 turns TX LPI on with the --eee-timer, width 1 turns it off",
          "[ethtool]")
{
    FakeNics nics;
    auto nic = nics.add("eth0", eee(true, true, 1000));
    auto b   = make(nics, eee_port("eth0", 20));
    CHECK(b->name() == "ethtool");
    CHECK(b->full_width() == 1);
    CHECK(nic->now == eee(true, true, 1000));  // the start changes nothing

    // The service's full width at its start: the site's settings stay.
    REQUIRE(b->set_width(1));
    CHECK(nic->now == eee(true, true, 1000));

    REQUIRE(b->set_width(0));
    CHECK(nic->now == eee(true, true, 20));
    REQUIRE(b->set_width(1));
    CHECK(nic->now == eee(true, false, 20));
    REQUIRE(b->set_width(0));
    CHECK(nic->now == eee(true, true, 20));

    // Only TX LPI is ever switched: no request differs in the advertisement.
    for (const EeeSettings& s : nic->sets) {
        CHECK(s.enabled == true);
    }
}

TEST_CASE("ethtool: without --eee-timer width 0 keeps the interface's own timer", "[ethtool]")
{
    FakeNics nics;
    auto nic = nics.add("eth0", eee(true, false, 250));
    auto b   = make(nics, eee_port("eth0"));
    REQUIRE(b->set_width(0));
    CHECK(nic->now == eee(true, true, 250));
    REQUIRE(b->set_width(1));
    CHECK(nic->now == eee(true, false, 250));
}

TEST_CASE("ethtool: every way back puts the settings found at the start back exactly", "[ethtool]")
{
    EeeSettings original;
    SECTION("EEE off") { original = eee(false, false, 0); }
    SECTION("EEE on, TX LPI on, timer 0") { original = eee(true, true, 0); }
    SECTION("EEE on, TX LPI on, timer 100 us") { original = eee(true, true, 100); }
    SECTION("EEE on, TX LPI off, timer 100 us") { original = eee(true, false, 100); }

    FakeNics nics;
    auto nic = nics.add("eth0", original);
    auto b   = make(nics, eee_port("eth0", 10));
    INFO(describe(original));

    REQUIRE(b->set_width(0));
    CHECK(nic->now != original);
    REQUIRE(b->restore_full_width());
    CHECK(nic->now == original);

    REQUIRE(b->set_width(0));
    REQUIRE(b->set_width(1));
    REQUIRE(b->release());
    CHECK(nic->now == original);

    // At rest nothing is written again.
    const std::size_t sets = nic->sets.size();
    REQUIRE(b->restore_full_width());
    REQUIRE(b->release());
    CHECK(nic->sets.size() == sets);

    // The backend's end restores too (a service whose own restore failed).
    REQUIRE(b->set_width(0));
    b.reset();
    CHECK(nic->now == original);
}

TEST_CASE("ethtool: a restore the interface refuses is an error and is tried again", "[ethtool]")
{
    FakeNics nics;
    auto nic = nics.add("eth0", eee(true, true, 100));
    auto b   = make(nics, eee_port("eth0", 10));
    REQUIRE(b->set_width(0));
    nic->set_error      = EIO;
    const Status failed = b->restore_full_width();
    REQUIRE_FALSE(failed);
    CHECK_THAT(failed.message(), Contains("eth0") && Contains("restoring"));
    nic->set_error = 0;
    REQUIRE(b->restore_full_width());
    CHECK(nic->now == eee(true, true, 100));
}

TEST_CASE("ethtool: widths other than 0 and 1 are refused, naming the range", "[ethtool]")
{
    FakeNics nics;
    auto nic = nics.add("eth0", eee(true, true, 100));
    auto b   = make(nics, eee_port());
    for (const unsigned w : {2u, 4u, 255u}) {
        const Status s = b->set_width(w);
        REQUIRE_FALSE(s);
        CHECK_THAT(s.message(), Contains("width " + std::to_string(w)) && Contains("0") &&
                                        Contains("1 (active)"));
    }
    CHECK(nic->sets.size() == 1);  // the start's probe only
}

TEST_CASE("ethtool: refusals name the interface, the kernel's answer and what to do", "[ethtool]")
{
    FakeNics nics;
    auto nic           = nics.add("eth0", eee(true, true, 100));
    const auto refusal = [&](const BackendConfig& config) {
        BackendResult r = make_ethtool_backend(config, nics.factory());
        REQUIRE_FALSE(r.status);
        CHECK_FALSE(r.backend);
        return r.status.message();
    };

    SECTION("a NIC without EEE: EOPNOTSUPP")
    {
        nic->get_error      = EOPNOTSUPP;
        nic->detail         = "";
        const std::string m = refusal(eee_port());
        CHECK_THAT(m, Contains("eth0 has no Energy-Efficient Ethernet control") &&
                              Contains(std::strerror(EOPNOTSUPP)) &&
                              Contains("ethtool --show-eee eth0") && Contains("another --link"));
    }
    SECTION("no such interface: ENODEV")
    {
        const std::string m = refusal(eee_port("eth9"));
        CHECK_THAT(m, Contains("no network interface 'eth9'") && Contains("--device") &&
                              Contains("ip link"));
    }
    SECTION("no CAP_NET_ADMIN: EPERM on the probe, nothing changed")
    {
        nic->set_error      = EPERM;
        const std::string m = refusal(eee_port());
        CHECK_THAT(m, Contains("eth0") && Contains("CAP_NET_ADMIN") && Contains("root"));
        CHECK(nic->now == eee(true, true, 100));
    }
    SECTION("the driver's own words are passed on")
    {
        nic->set_error      = EINVAL;
        nic->detail         = "Setting EEE Tx LPI timer is not supported";
        const std::string m = refusal(eee_port());
        CHECK_THAT(m, Contains("eth0") && Contains("Setting EEE Tx LPI timer is not supported"));
    }
    SECTION("no --device")
    {
        CHECK_THAT(refusal(eee_port("")), Contains("--device IFNAME is required"));
    }
    SECTION("a name no interface can have")
    {
        CHECK_THAT(refusal(eee_port("a/b")), Contains("--device") && Contains("'/'"));
        CHECK_THAT(refusal(eee_port("sixteen-chars-ab")), Contains("1 to 15 characters"));
    }
    SECTION("a port model of more than one lane")
    {
        BackendConfig config = eee_port();
        config.link.lanes    = 4;
        CHECK_THAT(refusal(config), Contains("one lane") && Contains("L=4"));
    }
}

TEST_CASE("ethtool: the state file holds the settings found before the first change, until "
          "they are back",
          "[ethtool]")
{
    TempDir dir;
    const std::string path = dir.path + "/port.sock" + kEeeStateFileSuffix;
    FakeNics nics;
    auto nic = nics.add("eth0", eee(true, true, 100));
    auto b   = make(nics, eee_port("eth0", 10));
    use_eee_state_file(path, *b, nics.factory());

    REQUIRE(b->set_width(1));
    CHECK_FALSE(exists(path));  // nothing changed yet
    REQUIRE(b->set_width(0));
    REQUIRE(exists(path));
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    std::string why;
    const auto line = parse_eee_state(read_all(path), why);
    INFO(read_all(path) << why);
    REQUIRE(line);
    CHECK(line->device == "eth0");
    CHECK(line->original == eee(true, true, 100));

    REQUIRE(b->release());
    CHECK_FALSE(exists(path));
}

TEST_CASE("ethtool: what a killed service left is put back first and stays the original",
          "[ethtool]")
{
    TempDir dir;
    const std::string path = dir.path + "/port.sock" + kEeeStateFileSuffix;
    FakeNics nics;
    // The killed service left eth0 with TX LPI on at its short timer.
    auto nic = nics.add("eth0", eee(true, true, 10));
    {
        std::ofstream out(path);
        out << "# slimlinkd pid 1 --link ethtool: the EEE settings before it changed them\n"
            << format_eee_state({"eth0", eee(true, false, 300)}) << "\n";
    }
    ::chmod(path.c_str(), 0600);

    SECTION("by the ethtool backend of that interface")
    {
        auto b = make(nics, eee_port("eth0", 10));
        use_eee_state_file(path, *b, nics.factory());
        CHECK(nic->now == eee(true, false, 300));
        CHECK_FALSE(exists(path));
        REQUIRE(b->set_width(0));
        CHECK(exists(path));
        REQUIRE(b->restore_full_width());
        CHECK(nic->now == eee(true, false, 300));  // the first service's original
        CHECK_FALSE(exists(path));
    }
    SECTION("by a service with another backend")
    {
        auto emulated = make_emulated_backend(BackendConfig{}).backend;
        use_eee_state_file(path, *emulated, nics.factory());
        CHECK(nic->now == eee(true, false, 300));
        CHECK_FALSE(exists(path));
    }
    SECTION("an interface that is gone: the file stays for a service that can")
    {
        nics.nics.clear();
        auto emulated = make_emulated_backend(BackendConfig{}).backend;
        use_eee_state_file(path, *emulated, nics.factory());
        CHECK(exists(path));
    }
    SECTION("a file that is a symbolic link is not read")
    {
        const std::string target = dir.path + "/elsewhere";
        REQUIRE(::rename(path.c_str(), target.c_str()) == 0);
        REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
        auto emulated = make_emulated_backend(BackendConfig{}).backend;
        use_eee_state_file(path, *emulated, nics.factory());
        CHECK(nic->now == eee(true, true, 10));
        CHECK(nic->sets.empty());
    }
}

TEST_CASE("ethtool: state file lines that are not the backend's are refused, naming the form",
          "[ethtool]")
{
    std::string why;
    CHECK(parse_eee_state("ethtool eth0 eee=on tx-lpi=off tx-timer-us=17\n", why));
    for (const char *bad :
         {"", "# only a comment\n", "ethtool eth0 eee=yes tx-lpi=off tx-timer-us=1\n",
          "ethtool a/b eee=on tx-lpi=off tx-timer-us=1\n",
          "ethtool eth0 eee=on tx-lpi=off tx-timer-us=99999999999\n",
          "ethtool eth0 eee=on tx-lpi=off tx-timer-us=1 more\n",
          "exec eth0 eee=on tx-lpi=off tx-timer-us=1\n"}) {
        INFO(bad);
        why.clear();
        CHECK_FALSE(parse_eee_state(bad, why));
        CHECK_FALSE(why.empty());
    }
}

// The service's side: a rank killed (its socket closes, the server drops it)
// while the port idles puts the interface back at the site's settings.
TEST_CASE("ethtool under the port service: the last client gone puts the original back",
          "[ethtool][port_service]")
{
    FakeNics nics;
    const EeeSettings original = eee(true, true, 100);
    auto nic                   = nics.add("eth0", original);
    PortService service(make(nics, eee_port("eth0", 10)));
    CHECK(nic->now == original);

    const TimeNs us = 1'000;
    ClientInfo info;
    info.rank             = 0;
    info.local_rank       = 0;
    info.job_key          = "job";
    const std::uint32_t a = service.attach(info, 0);
    REQUIRE(service.publish(a, nullptr, 0, 50 * us));
    service.advance();  // a has joined
    REQUIRE(service.live_clients() == 1);
    // Width 0 reaches the backend from the ranks once the service takes
    // the EEE profile's low width; here it is asked directly.
    REQUIRE(service.backend().set_width(0));
    CHECK(nic->now == eee(true, true, 10));

    SECTION("the rank is killed")
    {
        service.drop(a, 100 * us, true);
        service.advance();
        CHECK(nic->now == original);
        CHECK(service.live_clients() == 0);
    }
    SECTION("the rank detaches; a later job is released again")
    {
        service.drop(a, 100 * us, false);
        service.advance();
        CHECK(nic->now == original);
        info.job_key          = "job2";
        const std::uint32_t b = service.attach(info, 200 * us);
        REQUIRE(service.publish(b, nullptr, 0, 250 * us));
        service.advance();
        REQUIRE(service.backend().set_width(0));
        CHECK(nic->now == eee(true, true, 10));
        service.drop(b, 300 * us, true);
        service.advance();
        CHECK(nic->now == original);
    }
    SECTION("the release is refused: a backend failure, restored at the end")
    {
        nic->set_error = EIO;
        service.drop(a, 100 * us, true);
        service.advance();
        CHECK(service.backend_failed());
        CHECK_THAT(service.problem(), Contains("eth0"));
        nic->set_error = 0;
    }
}

TEST_CASE("ethtool under the port service: its end restores the original",
          "[ethtool][port_service]")
{
    FakeNics nics;
    auto nic = nics.add("eth0", eee(false, false, 0));
    {
        PortService service(make(nics, eee_port("eth0", 10)));
        REQUIRE(service.backend().set_width(0));
        CHECK(nic->now == eee(false, true, 10));
    }
    CHECK(nic->now == eee(false, false, 0));
}

#ifdef HAVE_LIBMNL

namespace {

struct SetAttrs {
    bool has_header = false;
    std::string device;
    bool has_enabled = false;
    int tx_lpi       = -1;
    long long timer  = -1;
};

int on_header_attr(const nlattr *attr, void *data)
{
    auto *a = static_cast<SetAttrs *>(data);
    if (mnl_attr_get_type(attr) == ETHTOOL_A_HEADER_DEV_NAME &&
        mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0) {
        a->device = mnl_attr_get_str(attr);
    }
    return MNL_CB_OK;
}

int on_set_attr(const nlattr *attr, void *data)
{
    auto *a = static_cast<SetAttrs *>(data);
    switch (mnl_attr_get_type(attr)) {
    case ETHTOOL_A_EEE_HEADER:
        a->has_header = mnl_attr_validate(attr, MNL_TYPE_NESTED) >= 0;
        mnl_attr_parse_nested(attr, on_header_attr, data);
        break;
    case ETHTOOL_A_EEE_ENABLED: a->has_enabled = true; break;
    case ETHTOOL_A_EEE_TX_LPI_ENABLED:
        REQUIRE(mnl_attr_validate(attr, MNL_TYPE_U8) >= 0);
        a->tx_lpi = mnl_attr_get_u8(attr);
        break;
    case ETHTOOL_A_EEE_TX_LPI_TIMER:
        REQUIRE(mnl_attr_validate(attr, MNL_TYPE_U32) >= 0);
        a->timer = mnl_attr_get_u32(attr);
        break;
    default: break;
    }
    return MNL_CB_OK;
}

}  // namespace

TEST_CASE("ethtool: the EEE_SET request carries the interface, TX LPI and its timer, never the "
          "advertisement",
          "[ethtool]")
{
    alignas(nlmsghdr) char buf[kEeeMessageBytes];
    const bool lpi         = GENERATE(false, true);
    const std::uint32_t us = GENERATE(0u, 100u, 4'000'000'000u);
    const nlmsghdr *nlh    = build_eee_set_message(buf, 29, 7, "enp3s0f1", eee(true, lpi, us));
    REQUIRE(nlh);
    CHECK(nlh->nlmsg_type == 29);
    CHECK(nlh->nlmsg_seq == 7);
    CHECK((nlh->nlmsg_flags & NLM_F_REQUEST) != 0);
    CHECK((nlh->nlmsg_flags & NLM_F_ACK) != 0);
    REQUIRE(nlh->nlmsg_len <= sizeof buf);
    const auto *genl = static_cast<const genlmsghdr *>(mnl_nlmsg_get_payload(nlh));
    CHECK(genl->cmd == ETHTOOL_MSG_EEE_SET);
    CHECK(genl->version == ETHTOOL_GENL_VERSION);

    SetAttrs a;
    REQUIRE(mnl_attr_parse(nlh, sizeof(genlmsghdr), on_set_attr, &a) >= MNL_CB_STOP);
    CHECK(a.has_header);
    CHECK(a.device == "enp3s0f1");
    CHECK_FALSE(a.has_enabled);
    CHECK(a.tx_lpi == (lpi ? 1 : 0));
    CHECK(a.timer == static_cast<long long>(us));
}

TEST_CASE("ethtool: the kernel refuses lo (no EEE) and an interface that does not exist",
          "[ethtool]")
{
    std::string why;
    auto lo = open_netlink_eee_device("lo", why);
    INFO(why);
    REQUIRE(lo);
    CHECK(lo->get().error == EOPNOTSUPP);

    auto none = open_netlink_eee_device("slimnosuch0", why);
    REQUIRE(none);
    CHECK(none->get().error == ENODEV);

    BackendConfig config = eee_port("lo");
    BackendResult r      = make_ethtool_backend(config);
    REQUIRE_FALSE(r.status);
    CHECK_THAT(r.status.message(), Contains("lo has no Energy-Efficient Ethernet control"));
}

#endif  // HAVE_LIBMNL
