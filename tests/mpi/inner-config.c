/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a UCT caller sets in slim's interface configuration reaches the inner
 * transport (tcp): UCX's own tests shrink a transport's socket buffers and
 * segments with uct_config_modify() on the configuration they open it with,
 * by the transport's own names (SNDBUF, RCVBUF, TX_SEG_SIZE).
 *
 *   inner-config SEG_BYTES
 *
 * Opens slim's first device twice: once with its configuration as read (its
 * largest bcopy active message must follow a segment of SEG_BYTES, tcp's
 * default or what UCX_TCP_TX_SEG_SIZE says), once after setting SNDBUF=1k,
 * RCVBUF=128 and TX_SEG_SIZE=3kb in it (the largest bcopy message must follow
 * the 3 kB segment, and the socket tcp opens for an endpoint must have the
 * small buffers the kernel gives for those sizes, not the default ones). A
 * value the inner transport does not accept is refused.
 * Prints one line per check; exits 0 when all hold, 1 otherwise, 99 when
 * slim or UCT cannot be set up. Run under slimlink-run (which loads slim).
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what)
{
    printf("inner-config: %s: %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
}

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "inner-config: ERROR: %s: %s\n", what, ucs_status_string(status));
    exit(99);
}

/* slim's component and its first memory domain's name. */
static uct_component_h find_slim(char *md_name, size_t max)
{
    uct_component_attr_t attr = {0};
    uct_component_h *components, slim;
    unsigned i, count;
    ucs_status_t status;

    status = uct_query_components(&components, &count);
    if (status != UCS_OK) {
        die("uct_query_components", status);
    }
    for (i = 0; i < count; ++i) {
        attr.field_mask =
                UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        status = uct_component_query(components[i], &attr);
        if ((status != UCS_OK) || strcmp(attr.name, "slim") || (attr.md_resource_count == 0)) {
            continue;
        }
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = calloc(attr.md_resource_count, sizeof(*attr.md_resources));
        if ((attr.md_resources == NULL) || (uct_component_query(components[i], &attr) != UCS_OK)) {
            die("uct_component_query(slim)", UCS_ERR_NO_MEMORY);
        }
        snprintf(md_name, max, "%s", attr.md_resources[0].md_name);
        free(attr.md_resources);
        slim = components[i];
        uct_release_component_list(components);
        return slim;
    }
    fprintf(stderr, "inner-config: ERROR: no slim component with a memory "
                    "domain (is slim loaded, UCX_SLIM_INNER=tcp?)\n");
    exit(99);
}

/* The socket buffers the kernel gives a stream socket: the smallest send
 * and receive buffer over this process's stream sockets whose descriptor is
 * FIRST_FD or above (those opened since). 0 when there is none. */
typedef struct {
    int sndbuf;
    int rcvbuf;
} bufs_t;

static bufs_t smallest_bufs(int first_fd)
{
    bufs_t bufs = {0, 0};
    struct dirent *entry;
    struct stat st;
    socklen_t len;
    int fd, type, snd, rcv;
    DIR *dir;

    dir = opendir("/proc/self/fd");
    if (dir == NULL) {
        return bufs;
    }
    while ((entry = readdir(dir)) != NULL) {
        fd = atoi(entry->d_name);
        if ((entry->d_name[0] < '0') || (entry->d_name[0] > '9') || (fd < first_fd) ||
            (fd == dirfd(dir)) || (fstat(fd, &st) != 0) || !S_ISSOCK(st.st_mode)) {
            continue;
        }
        len = sizeof(type);
        if ((getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) || (type != SOCK_STREAM)) {
            continue;
        }
        len = sizeof(snd);
        if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len) != 0) {
            continue;
        }
        len = sizeof(rcv);
        if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len) != 0) {
            continue;
        }
        if ((bufs.sndbuf == 0) || (snd < bufs.sndbuf)) {
            bufs.sndbuf = snd;
        }
        if ((bufs.rcvbuf == 0) || (rcv < bufs.rcvbuf)) {
            bufs.rcvbuf = rcv;
        }
    }
    closedir(dir);
    return bufs;
}

/* The lowest descriptor number not open now: sockets opened later come at or
 * above it (or reuse a lower one closed since, which none here is). */
static int next_fd(void)
{
    int fd = dup(0);

    if (fd >= 0) {
        close(fd);
    }
    return fd;
}

/* slim's interface opened with CONFIG: the largest bcopy active message, and
 * the buffers of the sockets opened while it connected an endpoint to
 * itself (tcp sets SNDBUF/RCVBUF on a connection's socket). */
static size_t max_bcopy(uct_md_h md, uct_worker_h worker, const char *dev,
                        const uct_iface_config_t *config, bufs_t *bufs)
{
    uct_iface_params_t params = {0};
    uct_ep_params_t ep_params = {0};
    uct_device_addr_t *dev_addr;
    uct_iface_addr_t *iface_addr;
    uct_iface_attr_t attr;
    uct_iface_h iface;
    uct_ep_h ep;
    ucs_status_t status;
    int first_fd, i;

    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "slim";
    params.mode.device.dev_name = dev;
    status                      = uct_iface_open(md, worker, &params, config, &iface);
    if (status != UCS_OK) {
        die("uct_iface_open(slim)", status);
    }
    status = uct_iface_query(iface, &attr);
    if (status != UCS_OK) {
        die("uct_iface_query(slim)", status);
    }
    if (!(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        die("slim does not connect to an interface", UCS_ERR_UNSUPPORTED);
    }

    dev_addr   = calloc(1, attr.device_addr_len + 1);
    iface_addr = calloc(1, attr.iface_addr_len + 1);
    if ((dev_addr == NULL) || (iface_addr == NULL)) {
        die("calloc", UCS_ERR_NO_MEMORY);
    }
    status = uct_iface_get_device_address(iface, dev_addr);
    if (status == UCS_OK) {
        status = uct_iface_get_address(iface, iface_addr);
    }
    if (status != UCS_OK) {
        die("slim's interface address", status);
    }
    first_fd = next_fd();
    ep_params.field_mask =
            UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = iface;
    ep_params.dev_addr   = dev_addr;
    ep_params.iface_addr = iface_addr;
    status               = uct_ep_create(&ep_params, &ep);
    if (status != UCS_OK) {
        die("uct_ep_create(slim, to itself)", status);
    }
    /* The accepting side's socket comes from progress. */
    for (i = 0; i < 1000; ++i) {
        uct_worker_progress(worker);
    }
    *bufs = smallest_bufs(first_fd);
    uct_ep_destroy(ep);
    free(iface_addr);
    free(dev_addr);
    uct_iface_close(iface);
    return attr.cap.am.max_bcopy;
}

static uct_iface_config_t *read_config(uct_md_h md)
{
    uct_iface_config_t *config;
    ucs_status_t status;

    status = uct_md_iface_config_read(md, "slim", NULL, NULL, &config);
    if (status != UCS_OK) {
        die("uct_md_iface_config_read(slim)", status);
    }
    return config;
}

/* The largest bcopy message of a tcp interface carries one segment less
 * tcp's short header. */
static int follows_segment(size_t bcopy, size_t seg)
{
    return (bcopy <= seg) && (bcopy + 64 >= seg);
}

static void set(uct_iface_config_t *config, const char *name, const char *value)
{
    char what[160];
    ucs_status_t status = uct_config_modify(config, name, value);

    snprintf(what, sizeof(what),
             "uct_config_modify(slim's iface config, "
             "%s, %s): %s",
             name, value, ucs_status_string(status));
    check(status == UCS_OK, what);
}

int main(int argc, char **argv)
{
    char md_name[UCT_MD_NAME_MAX], what[200];
    uct_tl_resource_desc_t *resources;
    uct_iface_config_t *config;
    ucs_async_context_t *async;
    uct_md_config_t *md_config;
    uct_component_h component;
    uct_worker_h worker;
    unsigned i, num_resources;
    size_t seg, bcopy;
    bufs_t as_read, small;
    const char *dev = NULL;
    ucs_status_t status;
    uct_md_h md;

    if ((argc != 2) || (atol(argv[1]) <= 0)) {
        fprintf(stderr, "usage: inner-config SEG_BYTES\n");
        return 99;
    }
    seg = (size_t)atol(argv[1]);

    component = find_slim(md_name, sizeof(md_name));
    status    = uct_md_config_read(component, NULL, NULL, &md_config);
    if (status != UCS_OK) {
        die("uct_md_config_read(slim)", status);
    }
    status = uct_md_open(component, md_name, md_config, &md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        die("uct_md_open(slim)", status);
    }
    status = uct_md_query_tl_resources(md, &resources, &num_resources);
    if (status != UCS_OK) {
        die("uct_md_query_tl_resources(slim)", status);
    }
    for (i = 0; (i < num_resources) && (dev == NULL); ++i) {
        if (!strcmp(resources[i].tl_name, "slim")) {
            dev = resources[i].dev_name;
        }
    }
    if (dev == NULL) {
        fprintf(stderr, "inner-config: ERROR: slim offers no device\n");
        return 99;
    }
    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async);
    if (status != UCS_OK) {
        die("ucs_async_context_create", status);
    }
    status = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
    if (status != UCS_OK) {
        die("uct_worker_create", status);
    }

    config = read_config(md);
    bcopy  = max_bcopy(md, worker, dev, config, &as_read);
    snprintf(what, sizeof(what),
             "as read, slim on %s carries bcopy active "
             "messages of up to %zu bytes: one segment of %zu bytes",
             dev, bcopy, seg);
    check(follows_segment(bcopy, seg), what);
    uct_config_release(config);

    config = read_config(md);
    set(config, "SNDBUF", "1k");
    set(config, "RCVBUF", "128");
    set(config, "TX_SEG_SIZE", "3kb");
    status = uct_config_modify(config, "TX_SEG_SIZE", "banana");
    snprintf(what, sizeof(what), "TX_SEG_SIZE=banana is refused: %s", ucs_status_string(status));
    check(status == UCS_ERR_INVALID_PARAM, what);
    bcopy = max_bcopy(md, worker, dev, config, &small);
    snprintf(what, sizeof(what),
             "with TX_SEG_SIZE=3kb set in slim's config, "
             "slim carries bcopy active messages of up to %zu bytes: one "
             "segment of 3072 bytes",
             bcopy);
    check(follows_segment(bcopy, 3072), what);
    /* Linux doubles a requested buffer and raises it to its minimum (about
     * 4.5 kB to send, 2.3 kB to receive); its defaults are 16 kB and 128 kB
     * (tcp_wmem, tcp_rmem). */
    snprintf(what, sizeof(what),
             "as read, tcp's connection has the "
             "kernel's default buffers: %d bytes to send, %d to receive",
             as_read.sndbuf, as_read.rcvbuf);
    check((as_read.sndbuf > 8192) && (as_read.rcvbuf > 8192), what);
    snprintf(what, sizeof(what),
             "with SNDBUF=1k and RCVBUF=128 set in "
             "slim's config, tcp's connection has %d bytes to send, %d to "
             "receive",
             small.sndbuf, small.rcvbuf);
    check((small.sndbuf > 0) && (small.sndbuf <= 8192) && (small.rcvbuf > 0) &&
                  (small.rcvbuf <= 8192),
          what);
    uct_config_release(config);

    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_release_tl_resource_list(resources);
    uct_md_close(md);
    printf("inner-config: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
