// SPDX-License-Identifier: BSD-3-Clause
// slimlinkd: the node service that owns a link port's backend (src/service;
// src/link/service_protocol.h). Ranks attach over a Unix-domain socket and
// publish their demand into rings the service maps; the port runs at the
// maximum demand over live clients and goes back to full width when the
// last one leaves, dies, or the service stops.
//
// It also owns the node's core frequencies (--cpu): ranks ask for their
// cores low while they wait, and the service lowers a core only when every
// rank that may run on it asks (src/service/cpu_controller.h).
//
//   slimlinkd [--port NAME] [--socket PATH] [--link emulated|ibmad|exec|ethtool]
//             [--cpu emulated|cpufreq|exec|off] ...
//   slimlinkd --status [--socket PATH]
//
// Exit status: 0 done (stopped, or no client within the grace period),
// 2 bad command line, 1 anything else (a backend that cannot start, a
// socket in use, --status with no service listening).
#include "base/log.h"
#include "base/output_file.h"
#include "base/parse.h"
#include "link/backend.h"
#include "predict/link_model.h"
#include "predict/link_profile.h"
#include "link/service_client.h"
#include "link/service_io.h"
#include "link/service_protocol.h"
#include "trace/trace.h"
#include "service/backend_ethtool.h"
#include "service/backend_registry.h"
#include "service/cpu_backend.h"
#include "service/cpu_controller.h"
#include "service/port_service.h"
#include "service/service_server.h"
#include "service/state_file.h"
#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace cpu   = slim::cpu;
namespace link  = slim::link;
namespace parse = slim::parse;
namespace svc   = slim::link::service;
namespace io    = slim::link::service_io;
using namespace std::chrono_literals;

constexpr const char *program = "slimlinkd";
constexpr int exit_failure    = 1;
constexpr int exit_usage      = 2;

constexpr std::chrono::nanoseconds grace_max = 24h;
// --status runs before every job slimlink-run starts: each step (connect,
// request, answer) is bounded, so a service that does not answer delays
// the job by seconds, not for ever.
constexpr std::chrono::milliseconds status_step_timeout{2000};
constexpr std::chrono::nanoseconds wait_max = 24h;
// ethtool's LPI entry timer is a u32 of microseconds; drivers take far less
// (mvneta at most 255 us), and they refuse what they cannot set.
constexpr std::chrono::nanoseconds eee_timer_max = 1s;

using slim::tools::link_forms;
using slim::tools::UsageError;
using slim::tools::value_of;

struct Options {
    std::string port = "emulated";
    std::string socket;  // empty: the default for --system or not
    bool system         = false;
    std::string backend = "emulated";
    std::string exec_template;
    std::chrono::milliseconds exec_timeout{2000};  // --exec and --cpu-exec commands
    std::string device;
    unsigned ib_port = 1;
    std::optional<std::uint32_t> eee_timer_us;
    link::LinkConfig link;
    std::chrono::milliseconds grace{5000};
    std::chrono::milliseconds first_client_wait{60000};
    unsigned max_connections_per_uid = link::ServerOptions::kDefaultMaxConnectionsPerUid;
    std::string cpu_backend          = "emulated";  // or "off"
    link::CpuBackendConfig cpu;
    slim::LogLevel log_level = slim::LogLevel::info;
    std::string log_file;
    bool detach = false;
    bool status = false;
    std::string help;
};

std::chrono::milliseconds milliseconds_of(const char *option, const std::string& v,
                                          std::chrono::nanoseconds max)
{
    const auto d = parse::duration(option, value_of(option, "DURATION", v), 0ns, max);
    // Rounded up: --grace 300us is not "never exit" (0).
    return std::chrono::ceil<std::chrono::milliseconds>(d);
}

Options parse_options(int argc, char **argv)
{
    Options o;
    CLI::App app("The node service that owns a link port: ranks attach over a Unix-domain "
                 "socket and publish their demand; the port runs at the maximum over them.",
                 program);
    app.set_help_flag("-h,--help", "this text");
    app.footer("Durations take a unit: ns, us, ms or s (e.g. 300ms, 5s).\n"
               "Exit status: 0 done, 2 bad command line, 1 other errors (the backend cannot "
               "start, another slimlinkd listens on the socket, --status finds none).");
    app.allow_extras();
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    app.add_option_function<std::string>(
               "--port", [&](const std::string& v) { o.port = value_of("--port", "NAME", v); },
               "the port's name, for the socket's and the reports' names (default emulated; "
               "an HCA port: DEVICE-PORT, e.g. mlx5_0-1)")
            ->type_name("NAME");
    app.add_option_function<std::string>(
               "--socket",
               [&](const std::string& v) { o.socket = value_of("--socket", "PATH", v); },
               "the socket (default: $XDG_RUNTIME_DIR/slimlink/PORT.sock, or "
               "/tmp/slimlink-UID/PORT.sock; /run/slimlink/PORT.sock with --system)")
            ->type_name("PATH");
    app.add_flag("--system", o.system, "a system service (root only): accepts every user's ranks")
            ->disable_flag_override();
    app.add_option_function<std::string>(
               "--link",
               [&](const std::string& v) {
                   const std::string name = value_of("--link", "BACKEND", v);
                   if (name != "emulated" && name != "ibmad" && name != "exec" &&
                       name != "ethtool") {
                       throw UsageError(
                               parse::bad_value("--link", name, "emulated, ibmad, exec, ethtool"));
                   }
                   o.backend = name;
               },
               "the backend: emulated (default), ibmad, exec or ethtool (Ethernet EEE)")
            ->type_name("BACKEND");
    app.add_option_function<std::string>(
               "--exec",
               [&](const std::string& v) { o.exec_template = value_of("--exec", "TEMPLATE", v); },
               "exec backend: the command that sets a width ({width}, {device}, {port} are "
               "replaced); required with --link exec")
            ->type_name("TEMPLATE");
    app.add_option_function<std::string>(
               "--exec-timeout",
               [&](const std::string& v) {
                   o.exec_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
                           parse::duration("--exec-timeout",
                                           value_of("--exec-timeout", "DURATION", v), 10ms, 600s));
                   o.cpu.exec_timeout = o.exec_timeout;
               },
               "--exec and --cpu-exec: how long a command may run before it is killed and the "
               "backend fails, 10ms to 600s (default 2s)")
            ->type_name("DURATION");
    app.add_option_function<std::string>(
               "--device", [&](const std::string& v) { o.device = value_of("--device", "DEV", v); },
               "ibmad/exec: the HCA ({device}), e.g. mlx5_0; ethtool: the interface, e.g. eth0")
            ->type_name("DEV");
    app.add_option_function<std::string>(
               "--ib-port",
               [&](const std::string& v) {
                   o.ib_port = static_cast<unsigned>(
                           parse::integer("--ib-port", value_of("--ib-port", "N", v), 1, 255));
               },
               "ibmad/exec: the HCA port number ({port}), 1 to 255 (default 1)")
            ->type_name("N");
    app.add_option_function<std::string>(
               "--eee-timer",
               [&](const std::string& v) {
                   const auto d =
                           parse::duration("--eee-timer", value_of("--eee-timer", "DURATION", v),
                                           0ns, eee_timer_max);
                   if (d.count() % 1000 != 0) {
                       throw UsageError("--eee-timer='" + v +
                                        "': a whole number of microseconds (the kernel's unit), "
                                        "0us to 1s");
                   }
                   o.eee_timer_us = static_cast<std::uint32_t>(d.count() / 1000);
               },
               "ethtool: the LPI entry timer while the port idles, 0us to 1s in whole "
               "microseconds (default: the interface's own)")
            ->type_name("DURATION");
    app.add_option_function<std::string>(
               "--link-config",
               [&](const std::string& v) {
                   try {
                       o.link = link::parse_link_config(value_of("--link-config", "SPEC", v));
                   } catch (const slim::Error& e) {
                       throw UsageError(parse::bad_value("--link-config", v, link_forms) + " (" +
                                        e.what() + ")");
                   }
               },
               "the port's profile, which ranks take over: a preset (" + link::preset_names() +
                       "), KEY=VALUE items L,P,low,tau,lowP (eee presets: P,Tw,Ts,lowP), or a "
                       "preset and items (default L=4,P=0.5,low=1,tau=10us)")
            ->type_name("SPEC");
    app.add_option_function<std::string>(
               "--cpu",
               [&](const std::string& v) {
                   const std::string name = value_of("--cpu", "BACKEND", v);
                   if (name != "emulated" && name != "cpufreq" && name != "exec" && name != "off") {
                       throw UsageError(
                               parse::bad_value("--cpu", name, "emulated, cpufreq, exec, off"));
                   }
                   o.cpu_backend = name;
               },
               "the CPU frequency backend: emulated (default), cpufreq, exec, or off (the "
               "ranks' CPU requests are not offered)")
            ->type_name("BACKEND");
    app.add_option_function<std::string>(
               "--cpu-exec",
               [&](const std::string& v) {
                   o.cpu.exec_template = value_of("--cpu-exec", "TEMPLATE", v);
               },
               "--cpu exec: the command that sets cores ({level} is low or full, {cores} a list "
               "such as 0,2-3, {khz} the low frequency); no shell; required with --cpu exec")
            ->type_name("TEMPLATE");
    app.add_option_function<std::string>(
               "--cpu-sysfs",
               [&](const std::string& v) { o.cpu.sysfs_root = value_of("--cpu-sysfs", "DIR", v); },
               "--cpu cpufreq: the folder holding cpuN/cpufreq/ (default /sys/devices/system/cpu)")
            ->type_name("DIR");
    app.add_option_function<std::string>(
               "--cpu-low-khz",
               [&](const std::string& v) {
                   o.cpu.low_khz = static_cast<std::uint32_t>(parse::integer(
                           "--cpu-low-khz", value_of("--cpu-low-khz", "KHZ", v), 1, 100'000'000));
               },
               "cpufreq, exec: the low frequency in kHz (default: cpufreq the core's "
               "cpuinfo_min_freq, exec the f_low of --cpu-states)")
            ->type_name("KHZ");
    app.add_option_function<std::string>(
               "--cpu-states",
               [&](const std::string& v) {
                   try {
                       o.cpu.table = cpu::parse_cpu_config(value_of("--cpu-states", "SPEC", v));
                   } catch (const slim::Error& e) {
                       throw UsageError("--cpu-states: " + std::string(e.what()));
                   }
               },
               "emulated: the core's table as slim-replay --cpu=SPEC takes it, "
               "f=GHZ,P=WATTS,f_low=GHZ,P_low=WATTS,tau=DURATION,handle=DURATION, any subset "
               "(default f=2.45,P=3,f_low=1.5,P_low=1.4,tau=20us,handle=5us: slim-replay(1), "
               "CPU MODEL)")
            ->type_name("SPEC");
    app.add_option_function<std::string>(
               "--cpu-cores",
               [&](const std::string& v) {
                   o.cpu.emulated_cores = static_cast<unsigned>(
                           parse::integer("--cpu-cores", value_of("--cpu-cores", "N", v), 1,
                                          slim::link::service::kMaxCpus));
               },
               "emulated: the node's cores (default: the cores this system has)")
            ->type_name("N");
    app.add_option_function<std::string>(
               "--grace",
               [&](const std::string& v) { o.grace = milliseconds_of("--grace", v, grace_max); },
               "exit this long after the last client left, 0ns to 86400s (a day); 0: never "
               "(default 5s)")
            ->type_name("DURATION");
    app.add_option_function<std::string>(
               "--first-client-wait",
               [&](const std::string& v) {
                   o.first_client_wait = milliseconds_of("--first-client-wait", v, wait_max);
               },
               "exit when no client came within this long, 0ns to 86400s (a day); 0: never "
               "(default 60s)")
            ->type_name("DURATION");
    app.add_option_function<std::string>(
               "--max-connections-per-uid",
               [&](const std::string& v) {
                   o.max_connections_per_uid = static_cast<unsigned>(parse::integer(
                           "--max-connections-per-uid",
                           value_of("--max-connections-per-uid", "N", v), 1, 1'000'000));
               },
               "connections one uid may hold at once, 1 to 1000000 (default " +
                       std::to_string(link::ServerOptions::kDefaultMaxConnectionsPerUid) +
                       "; lowered to what the descriptor limit allows)")
            ->type_name("N");
    app.add_option_function<std::string>(
               "--log-level",
               [&](const std::string& v) {
                   const std::string level = value_of("--log-level", "LEVEL", v);
                   for (const slim::LogLevel l :
                        {slim::LogLevel::off, slim::LogLevel::error, slim::LogLevel::warn,
                         slim::LogLevel::info, slim::LogLevel::debug, slim::LogLevel::trace}) {
                       if (parse::iequals(level, slim::to_string(l))) {
                           o.log_level = l;
                           return;
                       }
                   }
                   throw UsageError(parse::bad_value("--log-level", level,
                                                     "off, error, warn, info, debug, trace"));
               },
               "off, error, warn, info (default), debug or trace")
            ->type_name("LEVEL");
    app.add_option_function<std::string>(
               "--log-file",
               [&](const std::string& v) { o.log_file = value_of("--log-file", "FILE", v); },
               "append the log to FILE (default: standard error; /dev/null with --detach)")
            ->type_name("FILE");
    app.add_flag("--detach", o.detach,
                 "run in the background once the socket is listening; prints the service's "
                 "pid on standard output")
            ->disable_flag_override();
    app.add_flag("--status", o.status,
                 "print the status of the service listening on the socket as JSON and exit")
            ->disable_flag_override();

    if (slim::tools::parse_command_line(app, argc, argv, o.help)) {
        return o;
    }
    if (o.backend == "exec" && o.exec_template.empty()) {
        throw UsageError("--link exec needs --exec TEMPLATE (the command that sets a width)");
    }
    if (o.backend != "exec" && !o.exec_template.empty()) {
        throw UsageError("--exec is the command of --link exec; add --link exec or drop --exec");
    }
    // The profile is the port's: an EEE port allows LPI or not, an
    // InfiniBand port changes width; neither backend can drive the other.
    const bool eee = o.link.kind == link::LinkKind::eee;
    if (o.backend == "ethtool" && !eee) {
        throw UsageError("--link ethtool drives an Ethernet port's EEE: give its profile, "
                         "--link-config eee-... (e.g. eee-10gbase-t; slim-replay(1), LINK "
                         "PROFILES)");
    }
    if ((o.backend == "ibmad" || o.backend == "exec") && eee) {
        throw UsageError("--link " + o.backend +
                         " changes an InfiniBand port's width; an eee-* --link-config needs "
                         "--link ethtool or emulated");
    }
    if (o.backend != "ethtool" && o.eee_timer_us) {
        throw UsageError("--eee-timer is the timer of --link ethtool; add --link ethtool or drop "
                         "--eee-timer");
    }
    if (o.cpu_backend == "exec" && o.cpu.exec_template.empty()) {
        throw UsageError("--cpu exec needs --cpu-exec TEMPLATE (the command that sets cores)");
    }
    if (o.cpu_backend != "exec" && !o.cpu.exec_template.empty()) {
        throw UsageError("--cpu-exec is the command of --cpu exec; add --cpu exec or drop "
                         "--cpu-exec");
    }
    if (o.system && ::geteuid() != 0 && !o.status) {
        throw UsageError("--system: a system service runs as root (uid 0); this is uid " +
                         std::to_string(::geteuid()) + ". Drop --system for a per-user service");
    }
    if (o.port.empty()) {
        throw UsageError(parse::bad_value("--port", o.port, "a non-empty name"));
    }
    if (o.socket.empty()) {
        o.socket = o.system ? link::system_socket_path(o.port) : link::user_socket_path(o.port);
    }
    return o;
}

// ------------------------------------------------------------ --status

// A service killed while its port was narrow leaves its state file: say so,
// since no service is there to restore the port until the next start.
void print_left_state(const std::string& path)
{
    const std::optional<std::string> left = link::read_state_file(path);
    if (left) {
        std::fprintf(stderr,
                     "%s: the last slimlinkd on this socket left the port's width unknown (%s; "
                     "state file %s); the next slimlinkd restores full width when it starts\n",
                     program, left->c_str(), path.c_str());
    }
}

// A service killed with an interface's EEE changed leaves the EEE state
// file: say what it will put back.
void print_left_eee(const std::string& path)
{
    const std::optional<std::string> text = link::read_state_file_text(path, 4096);
    if (!text) {
        return;
    }
    std::string why;
    const std::optional<link::EeeStateLine> left = link::parse_eee_state(*text, why);
    const std::string what =
            left ? left->device + " had " + link::describe(left->original) : "unreadable: " + why;
    std::fprintf(stderr,
                 "%s: the last slimlinkd on this socket may have left an interface's EEE "
                 "settings changed (%s; state file %s); the next slimlinkd puts them back when "
                 "it starts\n",
                 program, what.c_str(), path.c_str());
}

// The cores' state file next to the socket, read for --status; nullopt
// when there is none. One of another user (a system instance's, to a
// user) is not read: `readable` false.
struct LeftCores {
    std::string path;
    bool readable = true;
    std::vector<std::string> lines;  // as they are, escaped, comments too
    link::CpuStateFile parsed;
};

std::optional<LeftCores> read_left_cores(const std::string& socket)
{
    LeftCores left;
    left.path = socket + link::kCpuStateFileSuffix;
    struct stat st {};
    if (::lstat(left.path.c_str(), &st) != 0) {
        return std::nullopt;
    }
    if (st.st_uid != ::geteuid()) {
        left.readable = false;
        return left;
    }
    const std::optional<std::string> text =
            link::read_state_file_text(left.path, link::kMaxCpuStateBytes);
    if (!text) {
        left.readable = false;
        return left;
    }
    left.parsed       = link::parse_cpu_state_file(*text);
    std::size_t start = 0;
    while (start < text->size()) {
        const std::size_t end  = std::min(text->find('\n', start), text->size());
        const std::string line = text->substr(start, end - start);
        if (!line.empty()) {
            // Written by a service, but shown on a terminal: escaped as
            // every text the tree did not write itself here.
            left.lines.push_back(slim::predict::escape_for_message(line, line.size()));
        }
        start = end + 1;
    }
    return left;
}

// The data lines and the reasons, in one line for a message.
std::string left_cores_text(const LeftCores& left)
{
    std::string text;
    for (const link::CpuStateLine& l : left.parsed.lines) {
        text.append(text.empty() ? "" : "; ")
                .append(slim::predict::escape_for_message(l.text, l.text.size()));
    }
    if (!left.parsed.not_restored.empty()) {
        text += " (not restored: " +
                slim::predict::escape_for_message(left.parsed.not_restored,
                                                  left.parsed.not_restored.size()) +
                ")";
    }
    return text.empty() ? "no cores listed" : text;
}

// A service killed while cores were low leaves the cores' state file: say
// so, as for the port's.
void print_left_cores(const std::string& socket)
{
    const std::optional<LeftCores> left = read_left_cores(socket);
    if (left && left->readable) {
        std::fprintf(stderr,
                     "%s: the last slimlinkd on this socket may have left cores low (%s; state "
                     "file %s); the next slimlinkd restores them when it starts\n",
                     program, left_cores_text(*left).c_str(), left->path.c_str());
    }
}

// What --status shows of the cores' state file while a service (`pid`)
// listens: null when there is none; else what it says, who wrote it and
// whether it holds a previous service's cores that the running one did not
// restore (restored false; null when it is only the running service's own
// record of the cores it has low now). A restore that succeeded removed
// the file: the log says what it restored.
nlohmann::ordered_json left_cores_json(const std::string& socket, std::int64_t pid,
                                       std::string& not_restored)
{
    using Json                          = nlohmann::ordered_json;
    const std::optional<LeftCores> left = read_left_cores(socket);
    not_restored.clear();
    if (!left) {
        return nullptr;
    }
    Json j;
    j["path"] = left->path;
    if (!left->readable) {
        j["readable"] = false;
        return j;
    }
    const link::CpuStateFile& f = left->parsed;
    const bool previous = (f.writer_pid != pid || !f.not_restored.empty()) && !f.lines.empty();
    if (previous) {
        not_restored = left_cores_text(*left);
    }
    j["readable"]        = true;
    j["lines"]           = left->lines;
    j["written_by_pid"]  = f.writer_pid != 0 ? Json(f.writer_pid) : Json(nullptr);
    j["by_this_service"] = f.writer_pid == pid;
    j["restored"]        = previous ? Json(false) : Json(nullptr);
    j["not_restored"]    = f.not_restored.empty() ? Json(nullptr)
                                                  : Json(slim::predict::escape_for_message(
                                                            f.not_restored, f.not_restored.size()));
    return j;
}

// One request without payload on a --status connection and its answer in
// `buf`, each step bounded by status_step_timeout: 0, or the errno (a
// closed connection is ECONNRESET). A descriptor the answer carries is
// closed: a status needs none.
int ask_service(int fd, svc::MessageType type, std::vector<std::uint8_t>& buf, io::Received& r)
{
    int err = io::send_message_wait(fd, type, nullptr, 0, nullptr, 0, status_step_timeout);
    if (err == 0) {
        r   = io::receive_wait(fd, buf.data(), buf.size(), status_step_timeout);
        err = r.bytes < 0 ? r.error : r.bytes == 0 ? ECONNRESET : 0;
    }
    if (r.fd >= 0) {
        ::close(r.fd);
        r.fd = -1;
    }
    return err;
}

// The CPU status, asked on the --status connection: empty and the
// message in `buf`, or why not.
std::string ask_cpu_status(int fd, std::vector<std::uint8_t>& buf)
{
    buf.assign(io::kReceiveBytes, 0);
    io::Received r;
    if (const int err = ask_service(fd, svc::MessageType::cpu_status, buf, r); err != 0) {
        return "no answer (" + std::string(std::strerror(err)) + ")";
    }
    svc::MessageHeader h;
    std::string bad = r.truncated
                              ? "a message too large"
                              : io::check_header(buf.data(), static_cast<std::size_t>(r.bytes), h);
    if (bad.empty() &&
        (h.type != static_cast<std::uint16_t>(svc::MessageType::cpu_status_reply) ||
         h.length < sizeof(svc::CpuStatusReply) ||
         (h.length - sizeof(svc::CpuStatusReply)) % sizeof(svc::CpuStatusCore) != 0)) {
        bad = "message type " + std::to_string(h.type) + " of " + std::to_string(h.length) +
              " bytes, not a CPU status reply";
    }
    if (bad.empty()) {
        buf.resize(static_cast<std::size_t>(r.bytes));
    }
    return bad;
}

nlohmann::ordered_json cpu_status_json(const std::vector<std::uint8_t>& buf)
{
    using Json            = nlohmann::ordered_json;
    const std::uint8_t *p = buf.data() + sizeof(svc::MessageHeader);
    svc::CpuStatusReply s;
    std::memcpy(&s, p, sizeof s);
    Json j;
    j["backend"]     = io::text_of(s.backend);
    j["cores"]       = s.cores;
    j["cores_low"]   = s.cores_low;
    j["ranks"]       = s.ranks;
    j["ranks_low"]   = s.ranks_low;
    j["requests"]    = s.requests;
    j["transitions"] = s.transitions;
    j["failed"]      = s.failed != 0;
    j["problem"] = io::text_of(s.problem).empty() ? Json(nullptr) : Json(io::text_of(s.problem));
    if (s.has_energy != 0) {
        j["energy"] = {{"span_ns", s.span_ns},
                       {"time_low_ns", s.time_low_ns},
                       {"penalty_ns", s.penalty_ns},
                       {"joules", s.energy_joules},
                       {"baseline_joules", s.baseline_joules},
                       {"saved_joules", s.baseline_joules - s.energy_joules}};
    } else {
        j["energy"] = nullptr;
    }
    Json low = Json::array();
    const std::size_t n =
            (buf.size() - sizeof(svc::MessageHeader) - sizeof s) / sizeof(svc::CpuStatusCore);
    for (std::size_t i = 0; i < n; ++i) {
        svc::CpuStatusCore c;
        std::memcpy(&c, p + sizeof s + i * sizeof c, sizeof c);
        if (c.low != 0) {
            low.push_back(c.core);
        }
    }
    j["low_cores"] = std::move(low);
    return j;
}

int print_status(const Options& o)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (o.socket.size() >= sizeof addr.sun_path) {
        std::fprintf(stderr, "%s: --socket '%s' is longer than %zu bytes\n", program,
                     o.socket.c_str(), sizeof addr.sun_path - 1);
        return exit_usage;
    }
    // The ranks' rules: a socket root owns is a system instance and trusted
    // as one; any other must be this user's, in a folder of this user's with
    // mode 0700. A listener another user planted in a folder they made
    // (the default folder, when it does not exist yet) could hold us in
    // connect() or answer for a service.
    bool system = o.system;
    struct stat st {};
    if (!system && ::geteuid() != 0 && ::stat(o.socket.c_str(), &st) == 0 && st.st_uid == 0) {
        system = true;
    }
    int fd = -1;
    try {
        link::check_service_socket(o.socket, system);
        fd = link::connect_service_socket(o.socket, status_step_timeout);
    } catch (const link::ServiceError& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        // A service that died leaves its socket; what it could not restore
        // is in the state files next to it (read only if they are ours).
        print_left_state(o.socket + link::kStateFileSuffix);
        print_left_eee(o.socket + link::kEeeStateFileSuffix);
        print_left_cores(o.socket);
        return exit_failure;
    }
    std::vector<std::uint8_t> buf(io::kReceiveBytes);
    io::Received r;
    if (const int err = ask_service(fd, svc::MessageType::status, buf, r); err != 0) {
        ::close(fd);
        const std::string why =
                err == ETIMEDOUT ? "within " + std::to_string(status_step_timeout.count()) + " ms"
                                 : "(" + std::string(std::strerror(err)) + ")";
        std::fprintf(stderr, "%s: the slimlinkd on %s did not answer the status request %s\n",
                     program, o.socket.c_str(), why.c_str());
        return exit_failure;
    }
    svc::MessageHeader h;
    std::string bad = r.truncated
                              ? "a message larger than the protocol's " +
                                        std::to_string(buf.size()) + " bytes"
                              : io::check_header(buf.data(), static_cast<std::size_t>(r.bytes), h);
    if (bad.empty() && h.type == static_cast<std::uint16_t>(svc::MessageType::refused) &&
        h.length >= sizeof(svc::Refusal)) {
        ::close(fd);
        // A refusal (this user is at the service's connection limit, or a
        // per-user service of someone else) is an answer: say its reason.
        svc::Refusal refusal;
        std::memcpy(&refusal, buf.data() + sizeof h, sizeof refusal);
        // The peer's text goes to a terminal.
        const std::string reason =
                slim::predict::escape_for_message(svc::text_of(refusal.reason), svc::kTextBytes);
        std::fprintf(stderr, "%s: the service on %s refused the status request: %s\n", program,
                     o.socket.c_str(), reason.c_str());
        return exit_failure;
    }
    if (bad.empty() && (h.type != static_cast<std::uint16_t>(svc::MessageType::status_reply) ||
                        h.length < sizeof(svc::StatusReply) ||
                        (h.length - sizeof(svc::StatusReply)) % sizeof(svc::StatusClient) != 0)) {
        bad = "message type " + std::to_string(h.type) + " of " + std::to_string(h.length) +
              " bytes, not a status reply";
    }
    if (!bad.empty()) {
        ::close(fd);
        std::fprintf(stderr, "%s: the service on %s answered garbage: %s\n", program,
                     o.socket.c_str(), bad.c_str());
        return exit_failure;
    }
    std::vector<std::uint8_t> cpu_buf;
    std::string cpu_error;
    if ((h.features & svc::kFeatureCpu) != 0) {
        cpu_error = ask_cpu_status(fd, cpu_buf);
    }
    ::close(fd);
    const std::uint8_t *p = buf.data() + sizeof h;
    svc::StatusReply s;
    std::memcpy(&s, p, sizeof s);
    using Json = nlohmann::ordered_json;
    Json j;
    j["socket"]              = o.socket;
    j["pid"]                 = s.pid;
    j["backend"]             = io::text_of(s.backend);
    j["port"]                = io::text_of(s.port);
    j["full_width"]          = s.full_width;
    j["width"]               = s.width;
    j["live_clients"]        = s.live_clients;
    j["other_users_clients"] = s.other_users_clients;
    j["clients_dropped"]     = s.clients_dropped;
    j["backend_errors"]      = s.backend_errors;
    j["backend_failed"]      = s.backend_failed != 0;
    j["width_unknown"]       = s.width_unknown != 0;
    j["problem"] = io::text_of(s.problem).empty() ? Json(nullptr) : Json(io::text_of(s.problem));
    Json clients = Json::array();
    const std::size_t n = (h.length - sizeof s) / sizeof(svc::StatusClient);
    for (std::size_t i = 0; i < n; ++i) {
        svc::StatusClient c;
        std::memcpy(&c, p + sizeof s + i * sizeof c, sizeof c);
        clients.push_back({{"client_id", c.client_id},
                           {"demand", c.demand},
                           {"rank", c.rank},
                           {"uid", c.uid},
                           {"pid", c.pid}});
    }
    j["clients"] = std::move(clients);
    // Only a service that offers the CPU extension has the section.
    if ((h.features & svc::kFeatureCpu) != 0) {
        j["cpu"] = cpu_error.empty() ? cpu_status_json(cpu_buf) : Json(nullptr);
        if (!cpu_error.empty()) {
            std::fprintf(stderr, "%s: the CPU status of the service on %s: %s\n", program,
                         o.socket.c_str(), cpu_error.c_str());
        }
    }
    // Read here, not asked: a service under --cpu off restores the cores
    // too, and has no CPU status to say it in.
    std::string not_restored;
    j["cpu_state_file"] = left_cores_json(o.socket, s.pid, not_restored);
    if (!not_restored.empty()) {
        std::fprintf(stderr,
                     "%s: the cores' state file %s: a previous slimlinkd left cores low that "
                     "the service on %s has not restored: %s\n",
                     program, (o.socket + link::kCpuStateFileSuffix).c_str(), o.socket.c_str(),
                     not_restored.c_str());
    }
    std::cout << j.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    return std::cout.flush() ? 0 : exit_failure;
}

// ------------------------------------------------------------ the service

std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int) { stop_requested.store(true, std::memory_order_relaxed); }

void install_signals()
{
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: epoll_wait returns EINTR at once
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
}

std::string log_label() { return "slimlinkd"; }

// Points standard input at /dev/null and standard output and error at
// the log file (or /dev/null). The log file gets the policy of traces and
// reports: it is often put in a shared folder, where another user could
// plant a link to a file of ours (the service, as root, would append to
// it) or something that is not a regular file.
bool redirect_std(const std::string& log_file, std::string& why)
{
    int out = -1;
    if (log_file.empty()) {
        out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    } else {
        try {
            out = slim::base::open_output_file(log_file, slim::base::ExistingFile::append, 0600);
        } catch (const slim::base::OutputFileError& e) {
            why = std::string("--log-file ") + e.what();
            return false;
        }
    }
    const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || out < 0) {
        why = "/dev/null: " + std::string(std::strerror(errno));
        if (out >= 0) {
            ::close(out);
        }
        return false;
    }
    ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::close(in);
    ::close(out);
    return true;
}

// A service outlives the command that started it, so a descriptor it
// inherited above standard error (a test harness's pipe, make's jobserver,
// a launcher's lock) would stay open for the service's life, and whoever
// waits for that pipe's end would wait for the service. It needs none.
void close_inherited_descriptors()
{
    if (::close_range(3, ~0U, 0) == 0) {
        return;
    }
    // A kernel before 5.9: the ones /proc lists, else all up to the limit.
    if (DIR *const dir = ::opendir("/proc/self/fd")) {
        std::vector<int> open;
        const int own = ::dirfd(dir);
        while (const dirent *const e = ::readdir(dir)) {
            char *end     = nullptr;
            const long fd = std::strtol(e->d_name, &end, 10);
            if (end != e->d_name && *end == '\0' && fd > 2 && fd != own) {
                open.push_back(static_cast<int>(fd));
            }
        }
        ::closedir(dir);
        for (const int fd : open) {
            ::close(fd);
        }
        return;
    }
    rlimit limit{};
    const rlim_t max = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                               ? std::min<rlim_t>(limit.rlim_cur, 1 << 20)
                               : 1 << 16;
    for (rlim_t fd = 3; fd < max; ++fd) {
        ::close(static_cast<int>(fd));
    }
}

// The service until it stops. `ready` (>= 0 with --detach): a pipe to the
// waiting parent, told "pid\n" once the socket listens or "!message" when
// the service cannot start.
int serve(const Options& o, int ready)
{
    auto fail = [&](const std::string& message) {
        if (ready >= 0) {
            const std::string m              = "!" + message;
            [[maybe_unused]] const ssize_t w = ::write(ready, m.data(), m.size());
            ::close(ready);
        } else {
            std::fprintf(stderr, "%s: %s\n", program, message.c_str());
        }
        return exit_failure;
    };
    if (ready >= 0) {
        // Detached: from here on the log goes to --log-file (or nowhere);
        // what stops the start is told to the waiting parent.
        std::string why;
        if (!redirect_std(o.log_file, why)) {
            return fail(why);
        }
    }
    link::BackendConfig config;
    config.link          = o.link;
    config.device        = o.device;
    config.port          = o.ib_port;
    config.exec_template = o.exec_template;
    config.exec_timeout  = o.exec_timeout;
    config.eee_timer_us  = o.eee_timer_us;

    link::PortServiceOptions service_options;
    service_options.port_name  = link::service_port_name(o.port);
    service_options.lane_watts = o.link.lane_watts;
    service_options.low_width  = o.link.low_width;
    std::string backend_error;
    std::unique_ptr<link::PortService> service;
    try {
        service = std::make_unique<link::PortService>(
                [&](link::Clock clock) -> std::unique_ptr<link::LinkBackend> {
                    config.clock             = std::move(clock);
                    link::BackendResult made = link::make_backend(o.backend, config);
                    if (!made.status) {
                        backend_error = made.status.message();
                    }
                    return std::move(made.backend);
                },
                service_options);
    } catch (const std::exception& e) {
        return fail(backend_error.empty() ? std::string(e.what()) : backend_error);
    }

    // The cores: a backend that cannot start (no cpufreq here, a file it
    // cannot write, a bad command) stops the service, naming why, before
    // any core has changed.
    std::unique_ptr<link::CpuController> cpu;
    if (o.cpu_backend != "off") {
        try {
            cpu = std::make_unique<link::CpuController>(
                    link::make_cpu_backend(o.cpu_backend, o.cpu, link::steady_now_ns()));
        } catch (const link::CpuBackendError& e) {
            return fail(std::string(e.what()) + " (--cpu off runs without CPU control)");
        }
    }

    link::ServerOptions server_options;
    server_options.cpu                     = cpu.get();
    server_options.socket_path             = o.socket;
    server_options.system                  = o.system;
    server_options.grace                   = o.grace;
    server_options.first_client_wait       = o.first_client_wait;
    server_options.max_connections_per_uid = o.max_connections_per_uid;
    server_options.link                    = o.link;
    std::unique_ptr<link::ServiceServer> server;
    try {
        server = std::make_unique<link::ServiceServer>(*service, server_options);
    } catch (const std::exception& e) {
        return fail(e.what());
    }
    slim::logger().info("slimlinkd: {}", service->backend().describe());
    if (cpu) {
        slim::logger().info("slimlinkd: {}", cpu->backend().describe());
    }
    // EEE settings a killed service left changed go back first, whatever
    // --link this one has; the ethtool backend then takes the file.
    link::use_eee_state_file(server->socket_path() + link::kEeeStateFileSuffix, service->backend());
    service->use_state_file(server->socket_path() + link::kStateFileSuffix);
    // Cores a killed service left low are restored under --cpu off too:
    // not driving the cores is no reason to leave them low.
    const std::string cpu_state = server->socket_path() + link::kCpuStateFileSuffix;
    if (cpu) {
        cpu->use_state_file(cpu_state, o.cpu, link::steady_now_ns());
    } else {
        link::restore_left_cores(cpu_state, o.cpu, nullptr, link::steady_now_ns());
    }
    if (ready >= 0) {
        const std::string m              = std::to_string(::getpid()) + "\n";
        [[maybe_unused]] const ssize_t w = ::write(ready, m.data(), m.size());
        ::close(ready);
    }
    const int status = server->run(stop_requested);
    // The socket goes first: no client attaches to a port going away. The
    // lock stays until the port and the cores are restored, so that a new
    // service waits for them instead of driving them at the same time.
    const int lock_fd = server->release_lock_to_caller();
    server.reset();
    service.reset();  // restores full width
    if (cpu) {
        cpu->stop(link::steady_now_ns());  // every core back to where it was
        slim::logger().info("slimlinkd: CPU at the stop: {}", cpu->summary(link::steady_now_ns()));
    }
    if (lock_fd >= 0) {
        ::close(lock_fd);
    }
    return status;
}

// --detach: fork; the child starts a session and forks the service, which
// reports through a pipe once its socket listens, so that the caller's
// next command finds it. The caller prints the service's pid.
int serve_detached(const Options& o)
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        std::fprintf(stderr, "%s: pipe: %s\n", program, std::strerror(errno));
        return exit_failure;
    }
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) {
        std::fprintf(stderr, "%s: fork: %s\n", program, std::strerror(errno));
        return exit_failure;
    }
    if (child == 0) {
        ::close(fds[0]);
        ::setsid();
        const pid_t daemon = ::fork();
        if (daemon != 0) {
            _exit(daemon < 0 ? exit_failure : 0);
        }
        ::umask(077);
        if (::chdir("/") != 0) {
            _exit(exit_failure);
        }
        _exit(serve(o, fds[1]));
    }
    ::close(fds[1]);
    int child_status = 0;
    ::waitpid(child, &child_status, 0);
    std::string answer;
    char chunk[512];
    for (;;) {
        const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
        if (n > 0) {
            answer.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    ::close(fds[0]);
    if (answer.empty()) {
        std::fprintf(stderr, "%s: the service exited before its socket was listening\n", program);
        return exit_failure;
    }
    if (answer[0] == '!') {
        std::fprintf(stderr, "%s: %s\n", program, answer.c_str() + 1);
        return exit_failure;
    }
    std::fputs(answer.c_str(), stdout);
    return std::fflush(stdout) == 0 ? 0 : exit_failure;
}

}  // namespace

int main(int argc, char **argv)
{
    Options options;
    try {
        options = parse_options(argc, argv);
    } catch (const std::exception& e) {  // UsageError, slim::ConfigError
        std::fprintf(stderr, "%s: %s\nTry '%s --help'.\n", program, e.what(), program);
        return exit_usage;
    }
    if (!options.help.empty()) {
        std::fputs(options.help.c_str(), stdout);
        return 0;
    }
    if (options.status) {
        return print_status(options);
    }
    close_inherited_descriptors();
    slim::set_log_label_source(log_label);
    slim::set_log_level(options.log_level);
    install_signals();
    if (options.detach) {
        return serve_detached(options);
    }
    if (!options.log_file.empty()) {
        std::string why;
        if (!redirect_std(options.log_file, why)) {
            std::fprintf(stderr, "%s: %s\n", program, why.c_str());
            return exit_failure;
        }
    }
    return serve(options, -1);
}
