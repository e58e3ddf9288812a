// SPDX-License-Identifier: BSD-3-Clause
// EeeDevice over the kernel's ethtool generic netlink family (Linux 5.6+),
// through libmnl as ethtool(8) itself does: ETHTOOL_MSG_EEE_GET and
// ETHTOOL_MSG_EEE_SET, the interface named in ETHTOOL_A_EEE_HEADER. Every
// request asks for an ack, and extended acks are on, so a refusal carries
// the driver's own words ("Setting EEE Tx LPI timer is not supported").
#include "service/backend_ethtool.h"

#include "slimlink_config.h"

#ifdef HAVE_LIBMNL
#include <libmnl/libmnl.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#endif

#include <cerrno>
#include <cstring>
#include <vector>

namespace slim::link {

#ifndef HAVE_LIBMNL

bool netlink_eee_built() { return false; }

std::unique_ptr<EeeDevice> open_netlink_eee_device(const std::string& /*name*/, std::string& why)
{
    why = "not built with libmnl (install the Debian package 'libmnl-dev' and rebuild)";
    return nullptr;
}

nlmsghdr *build_eee_set_message(void * /*buf*/, std::uint16_t /*family*/, std::uint32_t /*seq*/,
                                const std::string& /*device*/, const EeeSettings& /*settings*/)
{
    return nullptr;
}

#else

bool netlink_eee_built() { return true; }

namespace {

struct SocketCloser {
    void operator()(mnl_socket *s) const { mnl_socket_close(s); }
};
using Socket = std::unique_ptr<mnl_socket, SocketCloser>;

// A request's header: generic netlink, acked.
nlmsghdr *put_request(void *buf, std::uint16_t type, std::uint32_t seq, std::uint8_t cmd,
                      std::uint8_t version)
{
    nlmsghdr *nlh    = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type  = type;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq   = seq;
    auto *genl    = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
    genl->cmd     = cmd;
    genl->version = version;
    return nlh;
}

void put_device_header(nlmsghdr *nlh, const std::string& device)
{
    nlattr *nest = mnl_attr_nest_start(nlh, ETHTOOL_A_EEE_HEADER);
    mnl_attr_put_strz(nlh, ETHTOOL_A_HEADER_DEV_NAME, device.c_str());
    // The link-mode bitsets of the reply, which we do not read, in their
    // short form.
    mnl_attr_put_u32(nlh, ETHTOOL_A_HEADER_FLAGS, ETHTOOL_FLAG_COMPACT_BITSETS);
    mnl_attr_nest_end(nlh, nest);
}

// What one exchange collected.
struct Exchange {
    int error = 0;
    std::string detail;  // the extended ack's message
    // Replies.
    std::uint16_t family = 0;
    bool has_family      = false;
    EeeSettings settings;
    unsigned seen = 0;  // EEE attributes found: enabled, tx_lpi, timer
};

int on_error(const nlmsghdr *nlh, void *data)
{
    auto *ex = static_cast<Exchange *>(data);
    if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(nlmsgerr))) {
        errno = EBADMSG;
        return MNL_CB_ERROR;
    }
    const auto *err = static_cast<const nlmsgerr *>(mnl_nlmsg_get_payload(nlh));
    if (err->error == 0) {
        return MNL_CB_STOP;  // the ack
    }
    ex->error = -err->error;
    if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
        // The TLVs follow the request echoed back, unless it was capped.
        std::size_t offset = sizeof(nlmsgerr);
        if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
            offset += err->msg.nlmsg_len - sizeof(nlmsghdr);
        }
        // mnl_attr_for_each, which C++ cannot take (void * to nlattr *).
        const char *tail = static_cast<const char *>(mnl_nlmsg_get_payload_tail(nlh));
        for (auto *attr = static_cast<const nlattr *>(mnl_nlmsg_get_payload_offset(nlh, offset));
             mnl_attr_ok(attr, static_cast<int>(tail - reinterpret_cast<const char *>(attr)));
             attr = mnl_attr_next(attr)) {
            if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
                mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0) {
                ex->detail = mnl_attr_get_str(attr);
            }
        }
    }
    errno = ex->error;
    return MNL_CB_ERROR;
}

int on_family_attr(const nlattr *attr, void *data)
{
    auto *ex = static_cast<Exchange *>(data);
    if (mnl_attr_get_type(attr) == CTRL_ATTR_FAMILY_ID &&
        mnl_attr_validate(attr, MNL_TYPE_U16) >= 0) {
        ex->family     = mnl_attr_get_u16(attr);
        ex->has_family = true;
    }
    return MNL_CB_OK;
}

int on_family(const nlmsghdr *nlh, void *data)
{
    mnl_attr_parse(nlh, sizeof(genlmsghdr), on_family_attr, data);
    return MNL_CB_OK;
}

int on_eee_attr(const nlattr *attr, void *data)
{
    auto *ex = static_cast<Exchange *>(data);
    switch (mnl_attr_get_type(attr)) {
    case ETHTOOL_A_EEE_ENABLED:
        if (mnl_attr_validate(attr, MNL_TYPE_U8) >= 0) {
            ex->settings.enabled = mnl_attr_get_u8(attr) != 0;
            ex->seen |= 1;
        }
        break;
    case ETHTOOL_A_EEE_TX_LPI_ENABLED:
        if (mnl_attr_validate(attr, MNL_TYPE_U8) >= 0) {
            ex->settings.tx_lpi_enabled = mnl_attr_get_u8(attr) != 0;
            ex->seen |= 2;
        }
        break;
    case ETHTOOL_A_EEE_TX_LPI_TIMER:
        if (mnl_attr_validate(attr, MNL_TYPE_U32) >= 0) {
            ex->settings.timer_us = mnl_attr_get_u32(attr);
            ex->seen |= 4;
        }
        break;
    default: break;
    }
    return MNL_CB_OK;
}

int on_eee(const nlmsghdr *nlh, void *data)
{
    const auto *genl = static_cast<const genlmsghdr *>(mnl_nlmsg_get_payload(nlh));
    if (genl->cmd == ETHTOOL_MSG_EEE_GET_REPLY) {
        mnl_attr_parse(nlh, sizeof(genlmsghdr), on_eee_attr, data);
    }
    return MNL_CB_OK;
}

class NetlinkEeeDevice final : public EeeDevice {
public:
    NetlinkEeeDevice(Socket socket, std::string name)
        : socket_(std::move(socket)), name_(std::move(name)),
          portid_(mnl_socket_get_portid(socket_.get())), buf_(MNL_SOCKET_BUFFER_SIZE)
    {}

    // The ethtool family's id; false with `why` when the kernel has none.
    bool resolve(std::string& why)
    {
        nlmsghdr *nlh = put_request(buf_.data(), GENL_ID_CTRL, ++seq_, CTRL_CMD_GETFAMILY, 1);
        mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, ETHTOOL_GENL_NAME);
        Exchange ex;
        exchange(nlh, on_family, ex);
        if (ex.error != 0 || !ex.has_family) {
            why = "the kernel has no ethtool netlink family (Linux 5.6 and later have it): " +
                  std::string(std::strerror(ex.error != 0 ? ex.error : ENOENT));
            return false;
        }
        family_ = ex.family;
        return true;
    }

    EeeResult get() override
    {
        nlmsghdr *nlh = put_request(buf_.data(), family_, ++seq_, ETHTOOL_MSG_EEE_GET,
                                    ETHTOOL_GENL_VERSION);
        put_device_header(nlh, name_);
        Exchange ex;
        exchange(nlh, on_eee, ex);
        if (ex.error == 0 && ex.seen != 7) {
            ex.error  = EPROTO;
            ex.detail = "the reply lacks enabled, tx-lpi or tx-timer";
        }
        return {ex.error, ex.detail, ex.settings};
    }

    EeeResult set(const EeeSettings& settings) override
    {
        nlmsghdr *nlh = build_eee_set_message(buf_.data(), family_, ++seq_, name_, settings);
        Exchange ex;
        exchange(nlh, on_eee, ex);
        return {ex.error, ex.detail, settings};
    }

private:
    // Sends `nlh` and reads until its ack (or error) has come.
    void exchange(nlmsghdr *nlh, mnl_cb_t on_data, Exchange& ex)
    {
        const std::uint32_t seq = nlh->nlmsg_seq;
        if (mnl_socket_sendto(socket_.get(), nlh, nlh->nlmsg_len) < 0) {
            ex.error = errno;
            return;
        }
        mnl_cb_t control[NLMSG_MIN_TYPE] = {};
        control[NLMSG_ERROR]             = on_error;
        for (;;) {
            const ssize_t n = mnl_socket_recvfrom(socket_.get(), buf_.data(), buf_.size());
            if (n < 0) {
                ex.error = errno;
                return;
            }
            const int rc = mnl_cb_run2(buf_.data(), static_cast<std::size_t>(n), seq, portid_,
                                       on_data, &ex, control, NLMSG_MIN_TYPE);
            if (rc == MNL_CB_STOP) {
                return;
            }
            if (rc < 0) {
                if (ex.error == 0) {
                    ex.error = errno != 0 ? errno : EPROTO;
                }
                return;
            }
        }
    }

    Socket socket_;
    std::string name_;
    std::uint32_t portid_;
    std::vector<char> buf_;
    std::uint16_t family_ = 0;
    std::uint32_t seq_    = 0;
};

}  // namespace

nlmsghdr *build_eee_set_message(void *buf, std::uint16_t family, std::uint32_t seq,
                                const std::string& device, const EeeSettings& settings)
{
    nlmsghdr *nlh = put_request(buf, family, seq, ETHTOOL_MSG_EEE_SET, ETHTOOL_GENL_VERSION);
    put_device_header(nlh, device);
    // ETHTOOL_A_EEE_ENABLED is never sent: on many NICs a change of the
    // advertisement restarts auto-negotiation (the link is down for seconds).
    mnl_attr_put_u8(nlh, ETHTOOL_A_EEE_TX_LPI_ENABLED, settings.tx_lpi_enabled ? 1 : 0);
    mnl_attr_put_u32(nlh, ETHTOOL_A_EEE_TX_LPI_TIMER, settings.timer_us);
    return nlh;
}

std::unique_ptr<EeeDevice> open_netlink_eee_device(const std::string& name, std::string& why)
{
    Socket socket(mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC));
    if (!socket) {
        why = std::string("cannot open a generic netlink socket: ") + std::strerror(errno);
        return nullptr;
    }
    if (mnl_socket_bind(socket.get(), 0, MNL_SOCKET_AUTOPID) < 0) {
        why = std::string("cannot bind a generic netlink socket: ") + std::strerror(errno);
        return nullptr;
    }
    // The kernel's reason in its refusals; the request not echoed back.
    int one = 1;
    mnl_socket_setsockopt(socket.get(), NETLINK_EXT_ACK, &one, sizeof one);
    mnl_socket_setsockopt(socket.get(), NETLINK_CAP_ACK, &one, sizeof one);
    auto device = std::make_unique<NetlinkEeeDevice>(std::move(socket), name);
    if (!device->resolve(why)) {
        return nullptr;
    }
    return device;
}

#endif  // HAVE_LIBMNL

}  // namespace slim::link
