/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spank_slimlink: slimlink for jobs started with srun (spank_slimlink(8)).
 *
 *   srun --slimlink[=on|off|report=PATH.json|profile=NAME[,...]] ...
 *
 * Remote context (slurmstepd, once per node per step, as the job's user):
 * the task environment gets what slimlink-run gives a command (LD_PRELOAD
 * of the slim module, UCX_TLS=slim,sm,self unless the user set it) plus
 * UCX_SLIM_REPORT and UCX_SLIM_LINK_PROFILE from the option, and one node
 * service, slimlinkd, is started for the step on its own socket
 * (UCX_SLIM_SERVICE), unless a system instance listens. slurm_spank_exit
 * stops it once the step's tasks are gone, so nothing of the job is left.
 *
 * Local context (srun): at the end of the step, the node reports of the job
 * are merged by `slimlink-report merge` into slimlink-job-JOB.STEP.json
 * next to the report file; its summary line goes to srun's standard error
 * and into the job's AdminComment (Comment for a user who may not set it)
 * while the job runs: in an allocation of sbatch or salloc, not when srun
 * made its own, which it has released when its plugins end.
 *
 * Plugin arguments (plugstack.conf): module=PATH (or none, for a UCX with
 * slim built in), slimlinkd=PATH, report_tool=PATH, scontrol=PATH,
 * service_log=DIR. The defaults are the installed paths.
 *
 * Plain C and libc only: a SPANK plugin is loaded into srun and slurmstepd,
 * and must not bring the C++ runtime or the preloaded library into them.
 */
/* pipe2, setresuid and setresgid are GNU and Linux. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(slimlink, 1);

#ifndef SLIM_SPANK_MODULE
#define SLIM_SPANK_MODULE "/usr/lib/x86_64-linux-gnu/ucx/libuct_slim.so"
#endif
#ifndef SLIM_SPANK_SLIMLINKD
#define SLIM_SPANK_SLIMLINKD "/usr/bin/slimlinkd"
#endif
#ifndef SLIM_SPANK_REPORT_TOOL
#define SLIM_SPANK_REPORT_TOOL "/usr/bin/slimlink-report"
#endif

/* The system instance's socket for the emulated port (slimlinkd(1), FILES). */
#define SYSTEM_SOCKET "/run/slimlink/emulated.sock"
/* Bounds on what the plugin waits for: starting the service (it binds and
 * answers at once), its stop (it restores the port and removes its socket),
 * and each report tool or scontrol call at the end of a step. */
#define START_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 5000
#define TOOL_TIMEOUT_MS 30000

/* The presets slimlinkd --link-config and UCX_SLIM_LINK_PROFILE accept
 * (slim-replay(1), LINK PROFILES): profile= takes a name only, since the
 * option's items are comma separated like a profile's own figures. */
static const char *const link_presets[] = {"ib-qdr",
                                           "ib-edr",
                                           "ib-hdr",
                                           "ib-ndr",
                                           "eee-1000base-t",
                                           "eee-10gbase-t",
                                           "eee-10gbase-kr",
                                           "eee-25gbase-t",
                                           "eee-100g-deep",
                                           "eee-100g-fast",
                                           NULL};

#define ACCEPTED \
    "on, off, report=PATH.json, profile=NAME (ib-qdr, ib-edr, ib-hdr, ib-ndr, " \
    "eee-1000base-t, eee-10gbase-t, eee-10gbase-kr, eee-25gbase-t, eee-100g-deep, " \
    "eee-100g-fast), comma separated"

/* What --slimlink asked for. */
struct request {
    int given;
    int on;
    char report[PATH_MAX];
    char profile[32];
};

/* The plugin's arguments from plugstack.conf. */
struct settings {
    char module[PATH_MAX];
    char slimlinkd[PATH_MAX];
    char report_tool[PATH_MAX];
    char scontrol[PATH_MAX];
    char service_log[PATH_MAX];
};

static struct request request;
static struct settings settings;

/* Remote: the service this step started (0: none). */
static pid_t service_pid;
static char service_socket[PATH_MAX];
static uid_t service_uid;
static gid_t service_gid;

/* Local: the step, and its nodes as scontrol listed them before the
 * launch (at srun's exit the plugin is given no job to ask). */
static uint32_t local_job, local_step;
static int local_step_known;
static char step_nodes[4096];

static int copy(char *dst, size_t size, const char *src)
{
    const size_t n = strlen(src);
    if (n >= size) {
        return -1;
    }
    memcpy(dst, src, n + 1);
    return 0;
}

static int ends_with(const char *text, const char *suffix)
{
    const size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

/* ---------------------------------------------------------------- option */

static int parse_item(const char *item, struct request *req)
{
    if (strcmp(item, "on") == 0) {
        req->on = 1;
        return 0;
    }
    if (strcmp(item, "off") == 0) {
        req->on = 0;
        return 0;
    }
    if (strncmp(item, "report=", 7) == 0) {
        const char *path = item + 7;
        /* UCX_SLIM_REPORT's rule: a .json path with a name before the
         * suffix; the job report is written next to it. */
        if (!ends_with(path, ".json") || strlen(path) <= 5 || path[strlen(path) - 6] == '/') {
            slurm_error("--slimlink: report=%s: the report must be a path ending in .json "
                        "(accepted: " ACCEPTED ")",
                        path);
            return -1;
        }
        if (copy(req->report, sizeof req->report, path) != 0) {
            slurm_error("--slimlink: report=: the path is longer than %d bytes", PATH_MAX - 1);
            return -1;
        }
        return 0;
    }
    if (strncmp(item, "profile=", 8) == 0) {
        const char *name = item + 8;
        for (const char *const *p = link_presets; *p != NULL; ++p) {
            if (strcmp(name, *p) == 0) {
                copy(req->profile, sizeof req->profile, name);
                return 0;
            }
        }
        slurm_error("--slimlink: profile=%s is not a link profile (accepted: " ACCEPTED
                    "; for a profile's own figures set UCX_SLIM_LINK_PROFILE)",
                    name);
        return -1;
    }
    slurm_error("--slimlink: '%s' is not accepted (accepted: " ACCEPTED ")", item);
    return -1;
}

/* The option's value: empty (--slimlink alone) is on. */
static int parse_request(const char *arg, struct request *req)
{
    char buf[PATH_MAX + 64];
    memset(req, 0, sizeof *req);
    req->given = 1;
    req->on    = 1;
    if (arg == NULL || arg[0] == '\0') {
        return 0;
    }
    if (copy(buf, sizeof buf, arg) != 0) {
        slurm_error("--slimlink: the value is too long (accepted: " ACCEPTED ")");
        return -1;
    }
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        if (parse_item(item, req) != 0) {
            return -1;
        }
    }
    return 0;
}

static int option_cb(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    return parse_request(optarg, &request) == 0 ? 0 : -1;
}

static struct spank_option slimlink_option = {
        "slimlink",
        "[on|off|report=PATH.json|profile=NAME]",
        "Run the job's MPI traffic through slimlink's UCX transport slim, with a node "
        "service per node; report=PATH.json writes the reports and a job report "
        "(slimlink-job-JOB.STEP.json) next to it, profile= names the emulated port.",
        2,
        0,
        option_cb};

/* ---------------------------------------------------------------- arguments */

static int parse_settings(int ac, char **av)
{
    copy(settings.module, sizeof settings.module, SLIM_SPANK_MODULE);
    copy(settings.slimlinkd, sizeof settings.slimlinkd, SLIM_SPANK_SLIMLINKD);
    copy(settings.report_tool, sizeof settings.report_tool, SLIM_SPANK_REPORT_TOOL);
    copy(settings.scontrol, sizeof settings.scontrol, "scontrol");
    settings.service_log[0] = '\0';
    static const struct {
        const char *key;
        size_t offset;
    } keys[] = {
            {"module=", offsetof(struct settings, module)},
            {"slimlinkd=", offsetof(struct settings, slimlinkd)},
            {"report_tool=", offsetof(struct settings, report_tool)},
            {"scontrol=", offsetof(struct settings, scontrol)},
            {"service_log=", offsetof(struct settings, service_log)},
    };
    for (int i = 0; i < ac; ++i) {
        size_t k = 0;
        for (; k < sizeof keys / sizeof keys[0]; ++k) {
            const size_t n = strlen(keys[k].key);
            if (strncmp(av[i], keys[k].key, n) == 0) {
                if (copy((char *)&settings + keys[k].offset, PATH_MAX, av[i] + n) != 0) {
                    slurm_error("spank_slimlink: plugstack.conf argument %s is longer than %d "
                                "bytes",
                                keys[k].key, PATH_MAX - 1);
                    return -1;
                }
                break;
            }
        }
        if (k == sizeof keys / sizeof keys[0]) {
            slurm_error("spank_slimlink: unknown plugstack.conf argument '%s' (accepted: "
                        "module=PATH|none, slimlinkd=PATH, report_tool=PATH, scontrol=PATH, "
                        "service_log=DIR)",
                        av[i]);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- processes */

/* Output of a command: what it wrote on standard output and error. */
struct output {
    char out[4096];
    size_t out_len;
    char err[2048];
    size_t err_len;
};

/* One read of fd into buf (what does not fit is dropped); *open_fd is
 * cleared at its end. Returns read()'s answer. */
static ssize_t drain(int fd, char *buf, size_t size, size_t *len, int *open_fd)
{
    char chunk[512];
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
        size_t keep = (size_t)n;
        if (*len + keep >= size) {
            keep = size - 1 - *len;
        }
        memcpy(buf + *len, chunk, keep);
        *len += keep;
        buf[*len] = '\0';
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        *open_fd = 0;
    }
    return n;
}

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

/* Runs argv (by PATH when argv[0] has no '/'), its output in *out; as the
 * effective user and group entirely when `become_user` (slurmstepd drops
 * privileges only temporarily: the real uid is still root's). Waits until
 * it exits, at most timeout_ms (then kills its process group). Returns its
 * exit status, -1 when it did not run or exit normally (*out->err says
 * why). A daemon it forks may keep the pipes: its exit is enough. */
static int run(char *const argv[], int become_user, int timeout_ms, struct output *out)
{
    int out_pipe[2], err_pipe[2];
    memset(out, 0, sizeof *out);
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
        snprintf(out->err, sizeof out->err, "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        snprintf(out->err, sizeof out->err, "pipe: %s", strerror(errno));
        close(out_pipe[0]);
        close(out_pipe[1]);
        return -1;
    }
    const uid_t uid = geteuid();
    const gid_t gid = getegid();
    const pid_t pid = fork();
    if (pid == 0) {
        /* slurmstepd blocks SIGTERM and others in the thread that calls
         * us, and a mask survives exec: the service must get its SIGTERM. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        setpgid(0, 0);
        const int null = open("/dev/null", O_RDONLY);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
        }
        dup2(out_pipe[1], STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
        if (become_user && (setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)) {
            dprintf(STDERR_FILENO, "cannot become uid %u: %s", (unsigned)uid, strerror(errno));
            _exit(127);
        }
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "cannot run %s: %s", argv[0], strerror(errno));
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
        snprintf(out->err, sizeof out->err, "fork: %s", strerror(errno));
        close(out_pipe[0]);
        close(err_pipe[0]);
        return -1;
    }
    fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    int out_open = 1, err_open = 1, status = 0, exited = 0;
    const long deadline = now_ms() + timeout_ms;
    while (!exited) {
        struct pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                                {err_open ? err_pipe[0] : -1, POLLIN, 0}};
        poll(fds, 2, 50);
        if (out_open && fds[0].revents) {
            drain(out_pipe[0], out->out, sizeof out->out, &out->out_len, &out_open);
        }
        if (err_open && fds[1].revents) {
            drain(err_pipe[0], out->err, sizeof out->err, &out->err_len, &err_open);
        }
        const pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid || (done < 0 && errno == ECHILD)) {
            exited = done == pid ? 1 : -1;
        } else if (now_ms() > deadline) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            snprintf(out->err, sizeof out->err, "%s did not finish within %d s", argv[0],
                     timeout_ms / 1000);
            close(out_pipe[0]);
            close(err_pipe[0]);
            return -1;
        }
    }
    /* What it wrote before exiting is in the pipes; a daemon it left may
     * hold them open, so read what is there without waiting for their end. */
    while (out_open &&
           drain(out_pipe[0], out->out, sizeof out->out, &out->out_len, &out_open) > 0) {}
    while (err_open &&
           drain(err_pipe[0], out->err, sizeof out->err, &out->err_len, &err_open) > 0) {}
    close(out_pipe[0]);
    close(err_pipe[0]);
    /* Someone else reaped it (ECHILD): it ran, its status is unknown. */
    if (exited < 0) {
        return 0;
    }
    if (!WIFEXITED(status)) {
        snprintf(out->err + strlen(out->err), sizeof out->err - strlen(out->err),
                 "%s%s ended by signal %d", out->err[0] ? "; " : "", argv[0],
                 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return -1;
    }
    return WEXITSTATUS(status);
}

/* The first line of text, without its newline, for a log line. */
static const char *first_line(char *text)
{
    text[strcspn(text, "\n")] = '\0';
    return text;
}

/* ---------------------------------------------------------------- remote */

/* A system instance answers on SYSTEM_SOCKET: ranks find it themselves
 * (UCX_SLIM_SERVICE=auto), and it owns the port. */
static int system_instance_listens(void)
{
    struct stat st;
    if (stat(SYSTEM_SOCKET, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        return 0;
    }
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return 0;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    copy(addr.sun_path, sizeof addr.sun_path, SYSTEM_SOCKET);
    const int ok = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    close(fd);
    return ok;
}

/* The user's socket folder, as slimlinkd and the ranks find it: under the
 * job's XDG_RUNTIME_DIR when that exists on this node, else
 * /tmp/slimlink-UID; made 0700 if missing (we run as the user here). */
static int user_socket_folder(spank_t sp, char *dir, size_t size)
{
    char xdg[PATH_MAX];
    struct stat st;
    if (spank_getenv(sp, "XDG_RUNTIME_DIR", xdg, sizeof xdg) == ESPANK_SUCCESS && xdg[0] == '/' &&
        stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
        if (snprintf(dir, size, "%s/slimlink", xdg) >= (int)size) {
            return -1;
        }
    } else if (snprintf(dir, size, "/tmp/slimlink-%u", (unsigned)geteuid()) >= (int)size) {
        return -1;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        slurm_error("slimlink: cannot create the service's folder %s: %s", dir, strerror(errno));
        return -1;
    }
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        slurm_error("slimlink: the service's folder %s must be a directory of uid %u with mode "
                    "0700",
                    dir, (unsigned)geteuid());
        return -1;
    }
    return 0;
}

static int set_task_env(spank_t sp, const char *name, const char *value)
{
    if (spank_setenv(sp, name, value, 1) != ESPANK_SUCCESS) {
        slurm_error("slimlink: cannot set %s for the tasks", name);
        return -1;
    }
    return 0;
}

/* The environment slimlink-run gives a command, for the step's tasks. */
static int prepare_tasks(spank_t sp)
{
    char value[PATH_MAX * 2];
    if (strcmp(settings.module, "none") != 0) {
        if (access(settings.module, R_OK) != 0) {
            slurm_error("slimlink: the slim UCX module %s cannot be read on this node (%s); set "
                        "module= in plugstack.conf",
                        settings.module, strerror(errno));
            return -1;
        }
        char preload[PATH_MAX];
        if (spank_getenv(sp, "LD_PRELOAD", preload, sizeof preload) == ESPANK_SUCCESS &&
            preload[0] != '\0') {
            snprintf(value, sizeof value, "%s %s", settings.module, preload);
        } else {
            snprintf(value, sizeof value, "%s", settings.module);
        }
        if (set_task_env(sp, "LD_PRELOAD", value) != 0) {
            return -1;
        }
    }
    /* Not overwritten: the user's UCX_TLS, even empty, stands. */
    (void)spank_setenv(sp, "UCX_TLS", "slim,sm,self", 0);
    if (request.report[0] != '\0' && set_task_env(sp, "UCX_SLIM_REPORT", request.report) != 0) {
        return -1;
    }
    if (request.profile[0] != '\0' &&
        set_task_env(sp, "UCX_SLIM_LINK_PROFILE", request.profile) != 0) {
        return -1;
    }
    return 0;
}

/* Starts the step's node service on this node, as the job's user. */
static int start_service(spank_t sp, uint32_t job, uint32_t step)
{
    char value[PATH_MAX];
    if (spank_getenv(sp, "UCX_SLIM_SERVICE", value, sizeof value) == ESPANK_SUCCESS &&
        value[0] != '\0' && strcasecmp(value, "auto") != 0) {
        return 0; /* off, or the user's own socket */
    }
    if (spank_getenv(sp, "UCX_SLIM_LINK", value, sizeof value) == ESPANK_SUCCESS &&
        strcasecmp(value, "emulated") != 0) {
        return 0; /* a real port: driven by the administrator's system instance */
    }
    if (system_instance_listens()) {
        slurm_verbose("slimlink: the system instance at %s serves this node", SYSTEM_SOCKET);
        return 0;
    }
    char dir[PATH_MAX], grace[] = "5s", log[PATH_MAX], host[256] = "node";
    if (user_socket_folder(sp, dir, sizeof dir) != 0) {
        return -1;
    }
    gethostname(host, sizeof host - 1);
    /* The host in the name: where /tmp is one file system for several
     * nodes, their services must not meet on one path. */
    if (snprintf(service_socket, sizeof service_socket, "%s/slurm-%u.%u.%s.sock", dir, job, step,
                 host) >= (int)sizeof service_socket) {
        slurm_error("slimlink: the service's socket path under %s is too long", dir);
        return -1;
    }
    char *argv[16];
    int n     = 0;
    argv[n++] = settings.slimlinkd;
    argv[n++] = "--detach";
    argv[n++] = "--port";
    argv[n++] = "emulated";
    argv[n++] = "--socket";
    argv[n++] = service_socket;
    argv[n++] = "--grace";
    argv[n++] = grace;
    /* The ranks' profile is the port's, as slimlink-run starts it. */
    char profile[PATH_MAX] = "";
    if (request.profile[0] != '\0') {
        copy(profile, sizeof profile, request.profile);
    } else if (spank_getenv(sp, "UCX_SLIM_LINK_PROFILE", profile, sizeof profile) !=
               ESPANK_SUCCESS) {
        profile[0] = '\0';
    }
    if (profile[0] != '\0') {
        argv[n++] = "--link-config";
        argv[n++] = profile;
    }
    if (settings.service_log[0] != '\0') {
        if (snprintf(log, sizeof log, "%s/slimlinkd-%s-%u.%u.log", settings.service_log, host, job,
                     step) >= (int)sizeof log) {
            slurm_error("slimlink: service_log=%s: the log's path is too long",
                        settings.service_log);
            return -1;
        }
        argv[n++] = "--log-file";
        argv[n++] = log;
    }
    argv[n] = NULL;
    struct output out;
    const int rc   = run(argv, 1, START_TIMEOUT_MS, &out);
    const long pid = rc == 0 ? strtol(out.out, NULL, 10) : 0;
    if (rc != 0 || pid <= 1) {
        slurm_error("slimlink: cannot start the node service %s on %s (exit %d): %s",
                    settings.slimlinkd, host, rc, first_line(out.err));
        service_socket[0] = '\0';
        return -1;
    }
    service_pid = (pid_t)pid;
    service_uid = geteuid();
    service_gid = getegid();
    slurm_verbose("slimlink: node service pid %ld on %s, socket %s", pid, host, service_socket);
    return set_task_env(sp, "UCX_SLIM_SERVICE", service_socket);
}

/* The process `pid` is still the service we started and has not exited:
 * its command name says it is ours (a pid is reused only after it is gone),
 * and a zombie has exited (a detached service is init's child, which may
 * reap it late). */
static int service_runs(pid_t pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    const int read = fgets(stat, sizeof stat, f) != NULL;
    fclose(f);
    const char *open  = strchr(stat, '(');
    const char *close = strrchr(stat, ')');
    return read && open != NULL && close != NULL && strncmp(open, "(slimlinkd)", 11) == 0 &&
           close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

/* The lock slimlinkd keeps beside its socket for the next service on the
 * same path: a step's path has none. Removed as the user, in the user's
 * folder (we are root again here), so that a link planted there cannot
 * make root remove another file. */
static void remove_lock(void)
{
    char lock[PATH_MAX + 8];
    if (snprintf(lock, sizeof lock, "%s.lock", service_socket) >= (int)sizeof lock) {
        return;
    }
    const pid_t pid = fork();
    if (pid == 0) {
        if (setresgid(service_gid, service_gid, service_gid) != 0 ||
            setresuid(service_uid, service_uid, service_uid) != 0) {
            _exit(1);
        }
        _exit(unlink(lock) == 0 ? 0 : 1);
    }
    if (pid > 0) {
        waitpid(pid, NULL, 0);
    }
}

/* The tasks are gone, and with them every rank's hand-over: SIGTERM lets
 * the service restore the port and remove its socket. */
static void stop_service(void)
{
    if (service_pid <= 0) {
        return;
    }
    const pid_t pid = service_pid;
    service_pid     = 0;
    if (service_runs(pid) && kill(pid, SIGTERM) == 0) {
        const long deadline = now_ms() + STOP_TIMEOUT_MS;
        while (service_runs(pid) && now_ms() < deadline) {
            usleep(20000);
        }
        if (service_runs(pid)) {
            slurm_error("slimlink: the node service (pid %ld) did not stop within %d s of "
                        "SIGTERM; killed",
                        (long)pid, STOP_TIMEOUT_MS / 1000);
            kill(pid, SIGKILL);
        }
    }
    remove_lock();
}

/* ---------------------------------------------------------------- local */

/* The step's nodes, as a comma-separated list of host names. */
static void remember_step_nodes(uint32_t job, uint32_t step)
{
    char id[64];
    snprintf(id, sizeof id, "%u.%u", job, step);
    char *show[] = {settings.scontrol, "-o", "show", "step", id, NULL};
    struct output out;
    if (run(show, 0, TOOL_TIMEOUT_MS, &out) != 0) {
        slurm_verbose("slimlink: scontrol show step %s: %s", id, first_line(out.err));
        return;
    }
    const char *list = strstr(out.out, "NodeList=");
    if (list == NULL) {
        return;
    }
    char compressed[2048];
    snprintf(compressed, sizeof compressed, "%.*s", (int)strcspn(list + 9, " \n"), list + 9);
    char *names[] = {settings.scontrol, "show", "hostnames", compressed, NULL};
    if (run(names, 0, TOOL_TIMEOUT_MS, &out) != 0) {
        return;
    }
    size_t len = 0;
    for (char *save = NULL, *name = strtok_r(out.out, "\n", &save); name != NULL;
         name = strtok_r(NULL, "\n", &save)) {
        const int w =
                snprintf(step_nodes + len, sizeof step_nodes - len, "%s%s", len ? "," : "", name);
        if (w < 0 || (size_t)w >= sizeof step_nodes - len) {
            step_nodes[0] = '\0'; /* better none than a partial list */
            return;
        }
        len += (size_t)w;
    }
}

/* The report file of the step: report= of the option, else UCX_SLIM_REPORT
 * when it names a JSON file. Empty: no job report. */
static const char *report_file(void)
{
    if (request.report[0] != '\0') {
        return request.report;
    }
    const char *env = getenv("UCX_SLIM_REPORT");
    return env != NULL && ends_with(env, ".json") ? env : "";
}

/* Merges the node reports into the job report, prints its summary line
 * and puts it into the job's AdminComment (or Comment). */
static void job_report(uint32_t job, uint32_t step)
{
    const char *report = report_file();
    if (report[0] == '\0') {
        return;
    }
    if (access(settings.report_tool, X_OK) != 0) {
        dprintf(STDERR_FILENO,
                "slimlink: no job report: the merge tool %s is not there (set "
                "report_tool= in plugstack.conf)\n",
                settings.report_tool);
        return;
    }
    char job_json[PATH_MAX], key[64];
    const char *slash = strrchr(report, '/');
    if (snprintf(job_json, sizeof job_json, "%.*sslimlink-job-%u.%u.json",
                 slash ? (int)(slash - report + 1) : 0, report, job,
                 step) >= (int)sizeof job_json) {
        dprintf(STDERR_FILENO, "slimlink: no job report: the path next to %s is too long\n",
                report);
        return;
    }
    /* The job key the ranks and the node services use (LocalJob::key). */
    snprintf(key, sizeof key, "slurm-%u.%u", job, step);
    char *merge[12];
    int n      = 0;
    merge[n++] = settings.report_tool;
    merge[n++] = "merge";
    if (step_nodes[0] != '\0') {
        merge[n++] = "--expect-nodes";
        merge[n++] = step_nodes;
    }
    merge[n++] = "--job";
    merge[n++] = key;
    merge[n++] = "-o";
    merge[n++] = job_json;
    merge[n++] = (char *)report;
    merge[n]   = NULL;
    struct output out;
    int rc = run(merge, 0, TOOL_TIMEOUT_MS, &out);
    if (rc != 0) {
        dprintf(STDERR_FILENO, "slimlink: no job report: %s merge exited %d: %s\n",
                settings.report_tool, rc, first_line(out.err));
        return;
    }
    char *summary[] = {settings.report_tool, "summary", job_json, NULL};
    rc              = run(summary, 0, TOOL_TIMEOUT_MS, &out);
    if (rc != 0 || out.out[0] == '\0') {
        dprintf(STDERR_FILENO, "slimlink: job report %s written; %s summary exited %d: %s\n",
                job_json, settings.report_tool, rc, first_line(out.err));
        return;
    }
    const char *line = first_line(out.out);
    dprintf(STDERR_FILENO, "%s\n", line);

    /* The accounting field: AdminComment needs an operator (root or
     * SlurmUser); any user may set the Comment of their own job. */
    char id[32], field[sizeof out.out + 32];
    snprintf(id, sizeof id, "JobId=%u", job);
    snprintf(field, sizeof field, "AdminComment=%s", line);
    char *update[] = {settings.scontrol, "update", id, field, NULL};
    struct output upd;
    if (run(update, 0, TOOL_TIMEOUT_MS, &upd) == 0) {
        return;
    }
    snprintf(field, sizeof field, "Comment=%s", line);
    if (run(update, 0, TOOL_TIMEOUT_MS, &upd) == 0) {
        return;
    }
    /* An srun that made its own allocation has released it before its
     * plugins end, and Slurm changes nothing of a finished job. */
    if (strstr(upd.err, "finished") != NULL) {
        dprintf(STDERR_FILENO,
                "slimlink: job %u has ended, so its AdminComment cannot be set: srun made the "
                "allocation and released it; run srun inside sbatch or salloc to have it\n",
                job);
        return;
    }
    dprintf(STDERR_FILENO,
            "slimlink: cannot put the job report into job %u's AdminComment or Comment: %s\n", job,
            first_line(upd.err));
}

/* ---------------------------------------------------------------- hooks */

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    const spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE) {
        return 0;
    }
    if (parse_settings(ac, av) != 0) {
        return -1;
    }
    if (spank_option_register(sp, &slimlink_option) != ESPANK_SUCCESS) {
        slurm_error("spank_slimlink: cannot register --slimlink");
        return -1;
    }
    return 0;
}

static int step_ids(spank_t sp, uint32_t *job, uint32_t *step)
{
    if (spank_get_item(sp, S_JOB_ID, job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, step) != ESPANK_SUCCESS) {
        slurm_error("slimlink: cannot read the job and step ids");
        return -1;
    }
    /* A batch script or the extern step is no srun step: nothing to do. */
    return *step == SLURM_BATCH_SCRIPT || *step == SLURM_EXTERN_CONT ? 1 : 0;
}

/* srun, once the step exists and before its tasks start. */
int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!request.on || step_ids(sp, &local_job, &local_step) != 0) {
        return 0;
    }
    local_step_known = 1;
    if (report_file()[0] != '\0') {
        remember_step_nodes(local_job, local_step);
    }
    return 0;
}

/* slurmstepd, once per node and step, as the job's user. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    uint32_t job = 0, step = 0;
    if (!spank_remote(sp) || !request.on) {
        return 0;
    }
    const int ids = step_ids(sp, &job, &step);
    if (ids != 0) {
        return ids < 0 ? -1 : 0;
    }
    if (prepare_tasks(sp) != 0) {
        return -1;
    }
    return start_service(sp, job, step);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    if (!request.on) {
        return 0;
    }
    if (spank_context() == S_CTX_REMOTE) {
        stop_service();
        return 0;
    }
    if (spank_context() == S_CTX_LOCAL && local_step_known) {
        job_report(local_job, local_step);
    }
    return 0;
}
