// SPDX-License-Identifier: BSD-3-Clause
// UCX_SLIM_* parsing through UCX's parser and the one table of them
// (slim_config.h): defaults, every accepted form, every rejected form with a
// message naming the variable, the value and what is accepted.
#include "configuration.h"
#include "slim_config.h"

#include "predict/policy_registry.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>  // environ

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using slim::Config;
using slim::ConfigError;
using slim::LogLevel;
using slim::ReportTarget;

namespace {

using Env = std::map<std::string, std::string>;

// Runs UCX's parser over `env` as the process environment: every other
// UCX_SLIM_* variable is unset for the call and restored after it.
class ScopedEnvironment {
public:
    explicit ScopedEnvironment(const Env& env)
    {
        for (char **e = environ; *e != nullptr; ++e) {
            const std::string entry = *e;
            if (entry.rfind("UCX_SLIM_", 0) == 0) {
                const std::size_t eq        = entry.find('=');
                saved_[entry.substr(0, eq)] = entry.substr(eq + 1);
            }
        }
        for (const auto& [name, value] : saved_) {
            unsetenv(name.c_str());
        }
        for (const auto& [name, value] : env) {
            setenv(name.c_str(), value.c_str(), 1);
        }
        set_ = env;
    }
    ~ScopedEnvironment()
    {
        for (const auto& [name, value] : set_) {
            unsetenv(name.c_str());
        }
        for (const auto& [name, value] : saved_) {
            setenv(name.c_str(), value.c_str(), 1);
        }
    }
    ScopedEnvironment(const ScopedEnvironment&)            = delete;
    ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

private:
    Env saved_, set_;
};

Config parse(const Env& env)
{
    const ScopedEnvironment scope(env);
    return Config::from_ucx();
}

// The ConfigError message for `env`, or "" when it parses.
std::string error_for(const Env& env)
{
    try {
        parse(env);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("an empty environment yields the documented defaults")
{
    const Config c = parse({});
    CHECK(c.inner == "tcp");
    CHECK(c.report.kind == ReportTarget::Kind::none);
    CHECK(c.report.path.empty());
    CHECK(c.log_level == LogLevel::warn);
}

TEST_CASE("unrelated variables are ignored")
{
    const Config c = parse({{"UCX_TLS", "slim,self"}, {"UCX_SLIM_UNKNOWN", "x"}});
    CHECK(c.inner == "tcp");
}

TEST_CASE("UCX_SLIM_INNER accepts UCT transport names")
{
    for (const char *name : {"tcp", "rc_verbs", "rc_mlx5", "ud_verbs", "dc_mlx5", "posix", "x",
                             "a234567890123456789012345678901"}) {
        CAPTURE(name);
        CHECK(parse({{"UCX_SLIM_INNER", name}}).inner == name);
    }
}

TEST_CASE("UCX_SLIM_INNER rejects names that are not UCT transport names")
{
    for (const char *bad : {"", "TCP", "rc-verbs", "tcp,sm", " tcp", "tcp ", "slim",
                            "a2345678901234567890123456789012"}) {
        CAPTURE(bad);
        const std::string msg = error_for({{"UCX_SLIM_INNER", bad}});
        CHECK_THAT(msg, Contains(std::string("UCX_SLIM_INNER='") + bad + "'"));
        CHECK_THAT(msg, Contains("1 to 31 characters a-z, 0-9 and _"));
        CHECK_THAT(msg, Contains("other than slim"));
    }
}

TEST_CASE("UCX_SLIM_REPORT accepts none, stdout and paths ending in .json")
{
    SECTION("none, in any case")
    {
        CHECK(parse({{"UCX_SLIM_REPORT", "none"}}).report.kind == ReportTarget::Kind::none);
        CHECK(parse({{"UCX_SLIM_REPORT", "NONE"}}).report.kind == ReportTarget::Kind::none);
    }
    SECTION("stdout, in any case")
    {
        CHECK(parse({{"UCX_SLIM_REPORT", "stdout"}}).report.kind ==
              ReportTarget::Kind::stdout_text);
        CHECK(parse({{"UCX_SLIM_REPORT", "Stdout"}}).report.kind ==
              ReportTarget::Kind::stdout_text);
    }
    SECTION("relative and absolute JSON paths")
    {
        for (const char *path : {"r.json", "out/run 1.json", "/tmp/slim/report.json", "./x.json"}) {
            CAPTURE(path);
            const Config c = parse({{"UCX_SLIM_REPORT", path}});
            CHECK(c.report.kind == ReportTarget::Kind::json_file);
            CHECK(c.report.path == path);
        }
    }
}

TEST_CASE("UCX_SLIM_REPORT rejects anything else")
{
    for (const char *bad : {"", "foo", "stderr", "report.txt", "report.JSON", ".json", "dir/.json",
                            "report.json.bak", "json"}) {
        CAPTURE(bad);
        CHECK(error_for({{"UCX_SLIM_REPORT", bad}}) ==
              std::string("UCX_SLIM_REPORT='") + bad +
                      "': accepted values are none, stdout, or a path ending in .json");
    }
}

TEST_CASE("UCX_SLIM_LOG_LEVEL accepts every level in any case")
{
    const std::pair<const char *, LogLevel> levels[] = {
            {"off", LogLevel::off},     {"error", LogLevel::error}, {"warn", LogLevel::warn},
            {"info", LogLevel::info},   {"debug", LogLevel::debug}, {"trace", LogLevel::trace},
            {"DEBUG", LogLevel::debug}, {"Warn", LogLevel::warn}};
    for (const auto& [text, level] : levels) {
        CAPTURE(text);
        CHECK(parse({{"UCX_SLIM_LOG_LEVEL", text}}).log_level == level);
    }
}

TEST_CASE("UCX_SLIM_LOG_LEVEL rejects unknown levels")
{
    for (const char *bad : {"", "warning", "verbose", "3", "info "}) {
        CAPTURE(bad);
        CHECK(error_for({{"UCX_SLIM_LOG_LEVEL", bad}}) ==
              std::string("UCX_SLIM_LOG_LEVEL='") + bad +
                      "': accepted values are [off|error|warn|info|debug|trace]");
    }
}

TEST_CASE("every bad variable is reported at once")
{
    const std::string msg = error_for(
            {{"UCX_SLIM_INNER", "A"}, {"UCX_SLIM_REPORT", "x"}, {"UCX_SLIM_LOG_LEVEL", "y"}});
    CHECK_THAT(msg, Contains("UCX_SLIM_INNER='A'"));
    CHECK_THAT(msg, Contains("UCX_SLIM_REPORT='x'"));
    CHECK_THAT(msg, Contains("UCX_SLIM_LOG_LEVEL='y'"));
}

TEST_CASE("a good variable is not blamed for a bad one")
{
    const std::string msg = error_for({{"UCX_SLIM_INNER", "rc_verbs"}, {"UCX_SLIM_REPORT", "bad"}});
    CHECK_THAT(msg, Contains("UCX_SLIM_REPORT"));
    CHECK_THAT(msg, !Contains("UCX_SLIM_INNER"));
}

TEST_CASE("the integer parser accepts decimal integers within bounds")
{
    CHECK(slim::parse::integer("V", "0", 0, 10) == 0);
    CHECK(slim::parse::integer("V", "10", 0, 10) == 10);
    CHECK(slim::parse::integer("V", "-3", -5, 5) == -3);
    CHECK(slim::parse::integer("V", "9223372036854775807", 0, INT64_MAX) == INT64_MAX);
}

TEST_CASE("the integer parser rejects garbage, out-of-range values and overflow")
{
    for (const char *bad : {"", "x", "1x", "1.5", " 1", "1 ", "+1", "0x10", "11", "-1",
                            "99999999999999999999", "-99999999999999999999"}) {
        CAPTURE(bad);
        try {
            slim::parse::integer("UCX_SLIM_N", bad, 0, 10);
            FAIL("accepted '" << bad << "'");
        } catch (const ConfigError& e) {
            CHECK(std::string(e.what()) == std::string("UCX_SLIM_N='") + bad +
                                                   "': accepted values are integers from 0 to 10");
        }
    }
}

TEST_CASE("the number parser accepts decimal numbers within bounds")
{
    CHECK(slim::parse::real("V", "0.05", 0, 1) == Approx(0.05));
    CHECK(slim::parse::real("V", "0", 0, 1) == 0.0);
    CHECK(slim::parse::real("V", "1", 0, 1) == 1.0);
    CHECK(slim::parse::real("V", "1e-3", 0, 1) == Approx(0.001));
    CHECK(slim::parse::real("V", "-0.5", -1, 1) == Approx(-0.5));
}

TEST_CASE("the number parser rejects garbage, non-finite and out-of-range values")
{
    for (const char *bad :
         {"", "x", "0.5x", "1.5", "-0.1", "nan", "inf", "1e999", " 0.5", "+0.5", "0,5"}) {
        CAPTURE(bad);
        try {
            slim::parse::real("UCX_SLIM_R", bad, 0, 1);
            FAIL("accepted '" << bad << "'");
        } catch (const ConfigError& e) {
            CHECK(std::string(e.what()) ==
                  std::string("UCX_SLIM_R='") + bad + "': accepted values are numbers from 0 to 1");
        }
    }
}

TEST_CASE("the duration parser reads every unit")
{
    const auto d = [](const char *text) {
        return slim::parse::duration("V", text, 0ns, std::chrono::nanoseconds{3600s});
    };
    CHECK(d("0s") == 0ns);
    CHECK(d("5ns") == 5ns);
    CHECK(d("10us") == 10us);
    CHECK(d("100ms") == 100ms);
    CHECK(d("1s") == 1s);
    CHECK(d("1.5ms") == 1500us);
    CHECK(d("0.25us") == 250ns);
    CHECK(d("1e3us") == 1ms);
}

TEST_CASE("the duration parser checks bounds in any unit")
{
    const auto d = [](const char *text) {
        return slim::parse::duration("UCX_SLIM_T", text, 10us, 1s);
    };
    CHECK(d("10us") == 10us);
    CHECK(d("0.01ms") == 10us);
    CHECK(d("1000ms") == 1s);
    for (const char *bad : {"9us", "9999ns", "1001ms", "2s", "0.000009s"}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH(d(bad), std::string("UCX_SLIM_T='") + bad +
                                          "': accepted values are durations from 10us to 1s "
                                          "with a unit ns, us, ms or s (e.g. 10us)");
    }
}

TEST_CASE("the duration parser rejects missing units, garbage and overflow")
{
    const auto d = [](const char *text) {
        return slim::parse::duration("UCX_SLIM_T", text, 0ns, 1s);
    };
    for (const char *bad : {"", "10", "s", "ms", "10 us", "10m", "10min", "10US", "-1s", "+1s",
                            "1e999s", "infs", "nanms", "99999999999999999999999s", "10us "}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(d(bad), ConfigError);
        CHECK_THROWS_WITH(d(bad), Contains(std::string("UCX_SLIM_T='") + bad + "'") &&
                                          Contains("durations from 0ns to 1s"));
    }
}

TEST_CASE("durations in messages use the largest exact unit")
{
    CHECK(slim::parse::format_duration(1s) == "1s");
    CHECK(slim::parse::format_duration(100ms) == "100ms");
    CHECK(slim::parse::format_duration(1500us) == "1500us");
    CHECK(slim::parse::format_duration(10us) == "10us");
    CHECK(slim::parse::format_duration(1234ns) == "1234ns");
    CHECK(slim::parse::format_duration(0ns) == "0ns");
}

TEST_CASE("the link backend variables default to emulated, no command, no delay")
{
    const Config config = parse({});
    CHECK(config.link == slim::LinkBackendKind::emulated);
    CHECK(config.link_exec.empty());
    CHECK_FALSE(config.inject_delay);
}

TEST_CASE("UCX_SLIM_LINK accepts emulated, ibmad and exec")
{
    CHECK(parse({{"UCX_SLIM_LINK", "ibmad"}}).link == slim::LinkBackendKind::ibmad);
    CHECK(parse({{"UCX_SLIM_LINK", "Emulated"}}).link == slim::LinkBackendKind::emulated);
    const Config exec = parse({{"UCX_SLIM_LINK", "exec"},
                               {"UCX_SLIM_LINK_EXEC", "/usr/sbin/w {device} {port} {width}"}});
    CHECK(exec.link == slim::LinkBackendKind::exec);
    CHECK(exec.link_exec == "/usr/sbin/w {device} {port} {width}");
    CHECK(std::string(slim::to_string(slim::LinkBackendKind::exec)) == "exec");
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_LINK", "verbs"}}),
                      "UCX_SLIM_LINK='verbs': accepted values are [emulated|ibmad|exec]");
}

TEST_CASE("UCX_SLIM_LINK=exec requires UCX_SLIM_LINK_EXEC")
{
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_LINK", "exec"}}),
                      Contains("UCX_SLIM_LINK_EXEC is unset: it is required when "
                               "UCX_SLIM_LINK=exec") &&
                              Contains("containing {width}"));
}

TEST_CASE("UCX_SLIM_LINK_EXEC must contain {width} and no unknown placeholder")
{
    for (const char *bad : {"   ", "/bin/w {device} {port}", "/bin/w {width} {lanes}",
                            "/bin/w {width", "/bin/w width}", "{width}", "/bin/w {{width}}"}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH(parse({{"UCX_SLIM_LINK_EXEC", bad}}),
                          Contains(std::string("UCX_SLIM_LINK_EXEC='") + bad +
                                   "': accepted values are a command containing {width}"));
    }
    CHECK(parse({{"UCX_SLIM_LINK_EXEC", "w {width}"}}).link_exec == "w {width}");
    // Empty is the default, no command: an error only with UCX_SLIM_LINK=exec.
    CHECK(parse({{"UCX_SLIM_LINK_EXEC", ""}}).link_exec.empty());
}

TEST_CASE("UCX_SLIM_INJECT_DELAY is a UCX boolean")
{
    CHECK(parse({{"UCX_SLIM_INJECT_DELAY", "y"}}).inject_delay);
    CHECK(parse({{"UCX_SLIM_INJECT_DELAY", "YES"}}).inject_delay);
    CHECK(parse({{"UCX_SLIM_INJECT_DELAY", "1"}}).inject_delay);
    CHECK_FALSE(parse({{"UCX_SLIM_INJECT_DELAY", "n"}}).inject_delay);
    CHECK_FALSE(parse({{"UCX_SLIM_INJECT_DELAY", "0"}}).inject_delay);
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_INJECT_DELAY", "maybe"}}),
                      "UCX_SLIM_INJECT_DELAY='maybe': accepted values are <y|n>");
}

TEST_CASE("bad link variables are all reported together")
{
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_LINK", "x"}, {"UCX_SLIM_INJECT_DELAY", "maybe"}}),
                      Contains("UCX_SLIM_LINK='x'") && Contains("; UCX_SLIM_INJECT_DELAY='maybe'"));
}

TEST_CASE("UCX_SLIM_POLICY defaults to packing nothing")
{
    const Config config = parse({});
    CHECK_FALSE(config.policy.lossy());
    CHECK_FALSE(config.policy.lookup("halo"));
    CHECK_FALSE(parse({{"UCX_SLIM_POLICY", ""}}).policy.lossy());
}

TEST_CASE("UCX_SLIM_POLICY is parsed into the labels' precisions")
{
    const Config config = parse({{"UCX_SLIM_POLICY", "halo=keep:4:round;fft=rel:1e-6;*=off"}});
    CHECK(config.policy.lossy());
    const auto halo = config.policy.lookup("halo");
    REQUIRE(halo);
    CHECK(halo->keep_bytes == 4);
    CHECK(halo->mode == slim::pack::Rounding::nearest_even);
    const auto fft = config.policy.lookup("fft");
    REQUIRE(fft);
    CHECK(fft->keep_bytes == 4);
    CHECK_FALSE(config.policy.lookup("other"));
}

TEST_CASE("a malformed UCX_SLIM_POLICY makes the configuration invalid, with the other errors")
{
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_POLICY", "halo=keep:9"}}),
                      "UCX_SLIM_POLICY: 'halo=keep:9': keep must be 2..7; accepted forms: "
                      "LABEL=off, LABEL=keep:N[:truncate|round], LABEL=rel:EPS[:truncate|round], "
                      "LABEL is [A-Za-z0-9_.-]+ or *");
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_POLICY", "@/nonexistent/policy"}}),
                      Contains("UCX_SLIM_POLICY: '@/nonexistent/policy': cannot open"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_LINK", "x"}, {"UCX_SLIM_POLICY", "halo"}}),
                      Contains("UCX_SLIM_LINK='x'") &&
                              Contains("; UCX_SLIM_POLICY: 'halo': missing '='"));
}

TEST_CASE("UCX_SLIM_PACKING decides whether the transport steers UCP")
{
    CHECK(parse({}).packing == slim::PackingMode::automatic);
    CHECK_FALSE(parse({}).packing_steers());
    CHECK(parse({{"UCX_SLIM_POLICY", "halo=keep:4"}}).packing_steers());
    CHECK_FALSE(parse({{"UCX_SLIM_POLICY", "halo=off"}}).packing_steers());
    CHECK(parse({{"UCX_SLIM_PACKING", "ON"}}).packing_steers());
    CHECK_FALSE(
            parse({{"UCX_SLIM_PACKING", "off"}, {"UCX_SLIM_POLICY", "*=keep:3"}}).packing_steers());
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_PACKING", "maybe"}}),
                      Contains("UCX_SLIM_PACKING='maybe': accepted values are [auto|on|off]"));
}

TEST_CASE("UCX_SLIM_PREDICTOR picks what drives the link, adaptive by default")
{
    CHECK(parse({}).predictor.registry_name == "adaptive");
    CHECK(parse({{"UCX_SLIM_PREDICTOR", "spps"}}).predictor.kind == slim::link::PolicyKind::spps);
    CHECK(parse({{"UCX_SLIM_PREDICTOR", "PPS"}}).predictor.kind == slim::link::PolicyKind::pps);
    CHECK(parse({{"UCX_SLIM_PREDICTOR", "timeout"}}).predictor.kind ==
          slim::link::PolicyKind::timeout);
    CHECK(parse({{"UCX_SLIM_PREDICTOR", "off"}}).predictor.kind ==
          slim::link::PolicyKind::always_on);
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_PREDICTOR", "oracle"}}),
                      Contains("UCX_SLIM_PREDICTOR='oracle': accepted values are "
                               "[adaptive|spps|pps|timeout|off]"));
}

TEST_CASE("UCX_SLIM_TRACE names a directory; empty means no trace")
{
    CHECK(parse({}).trace_dir.empty());
    CHECK(parse({{"UCX_SLIM_TRACE", ""}}).trace_dir.empty());
    CHECK(parse({{"UCX_SLIM_TRACE", "/tmp/traces"}}).trace_dir == "/tmp/traces");
}

TEST_CASE("UCX_SLIM_REPORT_WAIT bounds the node report's wait, 10s by default")
{
    CHECK(parse({}).report_wait == 10s);
    CHECK(parse({{"UCX_SLIM_REPORT_WAIT", "0s"}}).report_wait == 0s);
    CHECK(parse({{"UCX_SLIM_REPORT_WAIT", "250ms"}}).report_wait == 250ms);
    CHECK(parse({{"UCX_SLIM_REPORT_WAIT", "600s"}}).report_wait == 600s);
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_REPORT_WAIT", "601s"}}),
                      Contains("UCX_SLIM_REPORT_WAIT='601s': accepted values are durations from "
                               "0s to 600s"));
    // UCX's time values: a bare number is seconds.
    CHECK(parse({{"UCX_SLIM_REPORT_WAIT", "10"}}).report_wait == 10s);
    CHECK_THROWS_WITH(
            parse({{"UCX_SLIM_REPORT_WAIT", "10 parsecs"}}),
            Contains("UCX_SLIM_REPORT_WAIT='10 parsecs': accepted values are time value"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_REPORT_WAIT", "-1s"}}),
                      Contains("UCX_SLIM_REPORT_WAIT='-1s'"));
}

TEST_CASE("UCX_SLIM_BOUNCE_SIZE, _COUNT and _GROW size the packed-put pool: up to 128 x 512k, "
          "8 at a time, by default")
{
    CHECK(parse({}).bounce_size == std::size_t{512} << 10);
    CHECK(parse({}).bounce_count == 128);
    CHECK(parse({}).bounce_grow == 8);
    CHECK(parse({{"UCX_SLIM_BOUNCE_GROW", "1"}}).bounce_grow == 1);
    CHECK(parse({{"UCX_SLIM_BOUNCE_GROW", "4096"}}).bounce_grow == 4096);
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_BOUNCE_GROW", "0"}}),
                      Contains("UCX_SLIM_BOUNCE_GROW='0': accepted values are whole numbers "
                               "from 1 to 4096"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_BOUNCE_GROW", "4097"}}),
                      Contains("UCX_SLIM_BOUNCE_GROW='4097'"));
    CHECK(parse({{"UCX_SLIM_BOUNCE_SIZE", "1m"}}).bounce_size == std::size_t{1} << 20);
    CHECK(parse({{"UCX_SLIM_BOUNCE_SIZE", "64k"}}).bounce_size == std::size_t{64} << 10);
    CHECK(parse({{"UCX_SLIM_BOUNCE_SIZE", "64m"}}).bounce_size == std::size_t{64} << 20);
    CHECK(parse({{"UCX_SLIM_BOUNCE_COUNT", "0"}}).bounce_count == 0);
    CHECK(parse({{"UCX_SLIM_BOUNCE_COUNT", "4096"}}).bounce_count == 4096);
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_BOUNCE_SIZE", "32k"}}),
                      Contains("UCX_SLIM_BOUNCE_SIZE='32k': accepted values are sizes from 64k "
                               "to 64m"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_BOUNCE_SIZE", "inf"}}),
                      Contains("UCX_SLIM_BOUNCE_SIZE='inf'"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_BOUNCE_SIZE", "lots"}}),
                      Contains("UCX_SLIM_BOUNCE_SIZE='lots'"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_BOUNCE_COUNT", "4097"}}),
                      Contains("UCX_SLIM_BOUNCE_COUNT='4097': accepted values are whole numbers "
                               "from 0 to 4096"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_BOUNCE_COUNT", "-1"}}),
                      Contains("UCX_SLIM_BOUNCE_COUNT='-1'"));
}

TEST_CASE("the table's enum names are the C++ enums' names, in order")
{
    for (unsigned i = 0; slim_config_log_levels[i] != nullptr; ++i) {
        CHECK(std::string(slim_config_log_levels[i]) == slim::to_string(static_cast<LogLevel>(i)));
    }
    for (unsigned i = 0; slim_config_links[i] != nullptr; ++i) {
        CHECK(std::string(slim_config_links[i]) ==
              slim::to_string(static_cast<slim::LinkBackendKind>(i)));
    }
    for (unsigned i = 0; slim_config_packing_modes[i] != nullptr; ++i) {
        CHECK(std::string(slim_config_packing_modes[i]) ==
              slim::to_string(static_cast<slim::PackingMode>(i)));
    }
    // UCX's list of UCX_SLIM_PREDICTOR values is the registry's live list.
    std::vector<std::string> predictors;
    for (unsigned i = 0; slim_config_predictors[i] != nullptr; ++i) {
        predictors.emplace_back(slim_config_predictors[i]);
    }
    CHECK(predictors == slim::link::live_policy_names());
}

TEST_CASE("a bad value from one variable leaves the others' reporting intact")
{
    // UCX's parser stops at the first refused value; the message still
    // lists every bad variable, each once, in the table's order.
    const std::string msg = error_for({{"UCX_SLIM_PREDICTOR", "x"},
                                       {"UCX_SLIM_INNER", "tcp"},
                                       {"UCX_SLIM_REPORT_WAIT", "soon"},
                                       {"UCX_SLIM_LOG_LEVEL", "loud"}});
    CHECK(msg.find("UCX_SLIM_REPORT_WAIT='soon'") < msg.find("UCX_SLIM_LOG_LEVEL='loud'"));
    CHECK(msg.find("UCX_SLIM_LOG_LEVEL='loud'") < msg.find("UCX_SLIM_PREDICTOR='x'"));
    CHECK_THAT(msg, !Contains("UCX_SLIM_INNER"));
}

TEST_CASE("UCX_SLIM_CPU, _WAIT, _WAIT_SPIN and _WAIT_MAX: off, spin, 50us and 1ms by default")
{
    const Config d = parse({});
    CHECK_FALSE(d.cpu);
    CHECK_FALSE(d.wait_yield);
    CHECK(d.wait_spin == std::chrono::microseconds(50));
    CHECK(d.wait_max == std::chrono::milliseconds(1));
    CHECK(parse({{"UCX_SLIM_CPU", "on"}}).cpu);
    CHECK(parse({{"UCX_SLIM_WAIT", "yield"}}).wait_yield);
    CHECK(parse({{"UCX_SLIM_WAIT_SPIN", "0s"}}).wait_spin == std::chrono::nanoseconds(0));
    CHECK(parse({{"UCX_SLIM_WAIT_MAX", "200us"}}).wait_max == std::chrono::microseconds(200));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_WAIT_MAX", "0s"}}),
                      Contains("UCX_SLIM_WAIT_MAX='0s': accepted values are durations from 1us "
                               "to 1s"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_WAIT_SPIN", "2s"}}), Contains("UCX_SLIM_WAIT_SPIN='2s'"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_CPU", "maybe"}}), Contains("UCX_SLIM_CPU"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_WAIT", "sleep"}}), Contains("UCX_SLIM_WAIT"));
}

TEST_CASE("UCX_SLIM_CPU_POLICY: adaptive by default, slim-replay's policies but the oracle")
{
    CHECK(parse({}).cpu_policy.kind == slim::link::PolicyKind::adaptive);
    const Config t = parse({{"UCX_SLIM_CPU_POLICY", "timeout:500us"}});
    CHECK(t.cpu_policy.kind == slim::link::PolicyKind::timeout);
    CHECK(t.cpu_policy.timeout_ns == 500'000);
    CHECK(parse({{"UCX_SLIM_CPU_POLICY", "context:2"}}).cpu_policy.kind ==
          slim::link::PolicyKind::context);
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_CPU_POLICY", "oracle"}}),
                      Contains("UCX_SLIM_CPU_POLICY='oracle': accepted values are always-on, "
                               "timeout:DURATION") &&
                              Contains("not oracle, which needs each wait's end"));
    CHECK_THROWS_WITH(parse({{"UCX_SLIM_CPU_POLICY", "sometimes"}}),
                      Contains("UCX_SLIM_CPU_POLICY='sometimes': accepted values are"));
}

TEST_CASE("UCX_SLIM_MAX_SLOWDOWN: 1 % by default, the bound of both adaptive policies")
{
    const Config d = parse({});
    CHECK(d.max_slowdown_pct == 1.0);
    CHECK(d.predictor.max_slowdown_pct == 1.0);
    CHECK(d.cpu_policy.max_slowdown_pct == 1.0);
    const Config five = parse({{"UCX_SLIM_MAX_SLOWDOWN", "5%"}});
    CHECK(five.max_slowdown_pct == 5.0);
    CHECK(five.predictor.max_slowdown_pct == 5.0);
    CHECK(five.cpu_policy.max_slowdown_pct == 5.0);
    CHECK(parse({{"UCX_SLIM_MAX_SLOWDOWN", "0.5"}}).max_slowdown_pct == 0.5);
    CHECK(parse({{"UCX_SLIM_MAX_SLOWDOWN", " 2 % "}}).max_slowdown_pct == 2.0);
    CHECK(parse({{"UCX_SLIM_MAX_SLOWDOWN", "0%"}}).max_slowdown_pct == 0.0);
    CHECK(parse({{"UCX_SLIM_MAX_SLOWDOWN", "100"}}).max_slowdown_pct == 100.0);
    for (const char *bad : {"101%", "-1%", "lots", "%", "1%%", "nan", "1e400"}) {
        INFO(bad);
        CHECK_THROWS_WITH(parse({{"UCX_SLIM_MAX_SLOWDOWN", bad}}),
                          Contains(std::string("UCX_SLIM_MAX_SLOWDOWN='") + bad +
                                   "': accepted values are a percentage from 0% to 100%"));
    }
}
