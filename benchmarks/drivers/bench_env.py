# SPDX-License-Identifier: BSD-3-Clause
"""What the benchmark drivers share, so that each driver is only its own
measurement: the command line's conventions, finding and bringing up to date
the build tree, pointing its launcher at that tree's module, library and node
service, running a program under a time limit, the statistics and the tables.

Conventions every driver keeps (and tests/tools/bench-drivers.test checks):
--help prints the driver's description and options and exits 0; a bad option
or value exits 2 with the driver's name and what was wrong; 1 means a run
produced no results; 3, with --strict, a missed target. Standard library
only: the drivers run on Debian 12's python3 as it comes."""

import argparse
import json
import math
import os
import platform
import re
import selectors
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# The source tree: benchmarks/drivers/ is two levels below it.
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Time allowed to MPI_Finalize once a run's results are out: MPICH over UCX
# tcp can stall there, and the results count all the same.
AFTER_RESULTS_GRACE_S = 10


# ------------------------------------------------------------ command line

class Driver:
    """One driver's name, for its messages and exit statuses."""

    def __init__(self, name):
        self.name = name

    def die(self, msg, code=2):
        """Prints `msg` under the driver's name and exits `code` (2: usage)."""
        print("%s: %s" % (self.name, msg), file=sys.stderr)
        sys.exit(code)

    def warn(self, msg):
        print("%s: %s" % (self.name, msg), file=sys.stderr)


def parser(doc, usage=None, allow_abbrev=True):
    """An ArgumentParser whose --help is the driver's docstring as written,
    then its options."""
    return argparse.ArgumentParser(description=doc, usage=usage, allow_abbrev=allow_abbrev,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def positive_int(text):
    """argparse type: an integer >= 1, decimal, all of the value."""
    if not re.fullmatch(r"[1-9][0-9]*", text):
        raise argparse.ArgumentTypeError("expected a positive integer, got '%s'" % text)
    return int(text)


def int_in(lo, hi):
    """argparse type: a decimal integer from `lo` to `hi`."""
    def parse(text):
        if not re.fullmatch(r"-?[0-9]+", text) or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError("expected %d to %d, got '%s'" % (lo, hi, text))
        return int(text)
    return parse


def comma_list(driver, option, text, allowed=None):
    """A comma-separated option value as a list; with `allowed`, every item
    must be one of them (else exit 2 naming the option)."""
    items = text.split(",")
    for item in items:
        if allowed is not None and item not in allowed:
            driver.die("%s: '%s' is not one of %s" % (option, item, ", ".join(allowed)))
    return items


def add_builddir(ap):
    ap.add_argument("--builddir", metavar="DIR",
                    help="the configured build tree (default: the current directory "
                         "when it is one, else build/ in the source tree)")


# ------------------------------------------------------------ the build tree

def first_executable(candidates):
    """The first of `candidates` (None entries allowed) that is an executable
    file; None when there is none."""
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def find_builddir(driver, explicit, program):
    """The build tree: `explicit`, else the current directory when its
    Makefile builds `program` (e.g. benchmarks/codec-bench), else build/ in
    the source tree. Exits 2 when that is not a configured build tree."""
    builddir = explicit
    if not builddir:
        builddir = os.path.join(TOP, "build")
        rule = re.compile(r"^%s\$\(EXEEXT\):" % re.escape(program), re.M)
        try:
            with open("Makefile") as f:
                if rule.search(f.read()):
                    builddir = "."
        except OSError:
            pass
    if not os.path.isfile(os.path.join(builddir, "Makefile")):
        driver.die("%s is not a configured build tree (see README.md, 'Building by "
                   "hand'); pass --builddir DIR" % builddir)
    return os.path.abspath(builddir)


def make(driver, builddir, targets, what):
    """Brings `targets` up to date in the build tree (make -s); exits 1 when
    that fails, naming `what` was being built."""
    rc = subprocess.run(["make", "-s", "-C", builddir] + list(targets),
                        stdout=subprocess.DEVNULL).returncode
    if rc != 0:
        driver.die("building %s in %s failed" % (what, builddir), 1)


def warn_if_asan(driver, builddir):
    try:
        with open(os.path.join(builddir, "Makefile")) as f:
            asan = "-fsanitize=address" in f.read()
    except OSError:
        asan = False
    if asan:
        driver.warn("warning: %s is built with --enable-asan; the numbers are not "
                    "representative" % builddir)


def find_launcher(builddir):
    """SLIMLINK_RUN, else slimlink-run in the build tree, the source tree's
    build/ or install/, or PATH; None when there is none."""
    if os.environ.get("SLIMLINK_RUN"):
        return os.environ["SLIMLINK_RUN"]
    return first_executable([
        os.path.join(builddir, "slimlink-run"),
        os.path.join(TOP, "slimlink-run"),
        os.path.join(TOP, "build", "slimlink-run"),
        os.path.join(TOP, "install", "bin", "slimlink-run"),
        shutil.which("slimlink-run"),
    ])


def build_env(launcher):
    """A build tree's slimlink-run needs the uninstalled module and library,
    as `make check` sets them (AM_TESTS_ENVIRONMENT in Makefile.am), and the
    tree's slimlinkd: it would otherwise start the installed one, which may
    be older than the tree. Variables already set win. Sets them in this
    process's environment, which every run inherits."""
    top = os.path.dirname(os.path.abspath(launcher.split()[0]))
    module = os.path.join(top, "ucx-module", ".libs", "libuct_slim.so")
    if os.path.isfile(module):
        os.environ.setdefault("SLIMLINK_MODULE_PATH", module)
        libs = os.path.join(top, "src", ".libs")
        old = os.environ.get("LD_LIBRARY_PATH")
        if libs not in (old or "").split(":"):
            os.environ["LD_LIBRARY_PATH"] = libs + (":" + old if old else "")
    daemon = os.path.join(top, "src", "tools", "slimlinkd")
    if os.path.isfile(daemon):
        os.environ.setdefault("SLIMLINKD", daemon)


def tree_launcher(builddir):
    """SLIMLINK_RUN when set, else the build tree's slimlink-run with the
    tree's module, library and slimlinkd in the environment."""
    if os.environ.get("SLIMLINK_RUN"):
        return os.environ["SLIMLINK_RUN"]
    launcher = os.path.join(builddir, "slimlink-run")
    build_env(launcher)
    return launcher


def mpiexec():
    """MPIEXEC (which may carry arguments), default mpiexec.mpich, as a list."""
    return os.environ.get("MPIEXEC", "mpiexec.mpich").split()


def mpi_command(launcher, ranks, program, wrapper=()):
    """launcher [WRAPPER...] mpiexec -n RANKS PROGRAM...: SLIMLINK_RUN and
    MPIEXEC may carry arguments, so both are split. WRAPPER (e.g. chrt -r 10)
    runs mpiexec and so the ranks, not the node service the launcher starts."""
    return launcher.split() + list(wrapper) + mpiexec() + ["-n", str(ranks)] + list(program)


def source_commit():
    """The source tree's commit, and whether tracked files differ from it."""
    def git(*args):
        return subprocess.run(["git", "-C", TOP] + list(args), capture_output=True,
                              text=True, check=True).stdout.strip()
    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (%s is not a git checkout)" % TOP
    return commit + (" with local changes" if changed else "")


# ------------------------------------------------------------ the machine

def proc_text(path, fallback):
    """A /proc file's text, or `fallback` where it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return fallback


def loadavg():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg spells them."""
    return " ".join(proc_text("/proc/loadavg", "?").split()[:3])


def cores():
    """The cores this process may run on (what nproc prints)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 0


def provenance(name):
    """Lines that say where a run's numbers come from: the command, the date,
    the host and its load, the source tree's commit."""
    return ["%s: command: %s (in %s)" % (name, shlex.join(sys.argv), os.getcwd()),
            "%s: %s, host %s (%d CPUs), load average %s, source commit %s"
            % (name, time.strftime("%Y-%m-%d %H:%M:%S %z"), platform.node(),
               os.cpu_count() or 0, loadavg(), source_commit())]


class Tee:
    """Standard output that also goes to a file (--output)."""

    def __init__(self, stream, path):
        self.stream, self.file = stream, open(path, "w")

    def write(self, text):
        self.stream.write(text)
        self.file.write(text)

    def flush(self):
        self.stream.flush()
        self.file.flush()


def tee_stdout(driver, path):
    """From now on, standard output also goes to `path` (exit 2 when it
    cannot be written)."""
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        sys.stdout = Tee(sys.stdout, path)
    except OSError as e:
        driver.die("--output %s: %s" % (path, e.strerror))


# ------------------------------------------------------------ running

class Run:
    """What one run left: its standard output, the tail of its standard
    error (when captured), its exit status (None when it was killed), and a
    note on how it ended when that was not by itself with status 0."""

    def __init__(self, out, err, returncode, note, timed_out):
        self.out, self.err, self.returncode = out, err, returncode
        self.note, self.timed_out = note, timed_out

    def err_tail(self, lines=3):
        return " | ".join(self.err.strip().splitlines()[-lines:])


def run(cmd, env=None, timeout_s=300, done_marker=None, stderr="capture"):
    """Runs `cmd` in its own session, so a time-out ends every process it
    started (mpiexec's ranks too). Once `done_marker` is in its output, a
    stall (MPI_Finalize) costs at most AFTER_RESULTS_GRACE_S and the output
    counts. stderr="capture" keeps standard error for Run.err;
    "inherit" lets it through to ours."""
    err_file = tempfile.TemporaryFile() if stderr == "capture" else None
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                            stderr=err_file if err_file else None,
                            start_new_session=True)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    chunks, seen = [], b""
    deadline = time.monotonic() + timeout_s
    done_at = None
    note, timed_out = "", False
    marker = done_marker.encode() if done_marker else None
    while True:
        now = time.monotonic()
        if done_at is not None and now - done_at > AFTER_RESULTS_GRACE_S:
            note = "results complete; MPI_Finalize stalled, killed"
            break
        if now > deadline:
            note, timed_out = "TIMEOUT after %d s, killed" % timeout_s, True
            break
        if sel.select(timeout=0.1):
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break  # standard output closed: the run is over or nearly
            chunks.append(chunk)
            if marker and done_at is None:
                seen = seen[-len(marker):] + chunk
                if marker in seen:
                    done_at = time.monotonic()
    sel.close()
    if not note:
        # stdout closed: give the process the same grace to exit
        try:
            proc.wait(max(0.0, min(deadline - time.monotonic(), AFTER_RESULTS_GRACE_S)))
        except subprocess.TimeoutExpired:
            note = "output complete; the run did not exit, killed"
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(5)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    proc.stdout.close()
    err = ""
    if err_file:
        err_file.seek(0)
        err = err_file.read().decode(errors="replace")
        err_file.close()
    returncode = None if note else proc.returncode
    if returncode not in (0, None):
        note = "exit status %d" % returncode
    return Run(b"".join(chunks).decode(errors="replace"), err, returncode, note, timed_out)


def json_lines(text, schema=None):
    """The JSON objects among `text`'s lines, those of `schema` only when
    given; lines that are not JSON are left out."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        if schema and '"%s"' % schema not in line:
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


# ------------------------------------------------------------ statistics

def median(values):
    return statistics.median(values)


def mean(values):
    """The mean of `values` without the missing (None) ones; NaN when none
    is left."""
    xs = [x for x in values if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def geometric_mean(ratios):
    return math.exp(statistics.mean(math.log(r) for r in ratios))


# ------------------------------------------------------------ output

def table(header, rows, align=None):
    """Prints a Markdown table: `header` cells, then `rows` of cells (strings).
    `align` per column, "l" or "r" ("| --- |" and "| ---: |"); without it
    every column is "|---|"."""
    print("| " + " | ".join(header) + " |")
    if align is None:
        print("|" + "---|" * len(header))
    else:
        print("| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def load_before(name=None):
    """'# load average before: ...' as the drivers print it first (after
    '# NAME: ' when given); returns the start time for load_after."""
    print("# %sload average before: %s (%d cores)"
          % (name + ": " if name else "", loadavg(), cores()), flush=True)
    return time.monotonic()


def load_after(start):
    print("# load average after: %s; %d s" % (loadavg(), int(time.monotonic() - start)),
          flush=True)


def program_driver(name, doc, program):
    """The whole of a driver that brings one benchmark program of the build
    tree up to date and runs it between two load average lines: its own
    --builddir DIR, every other option to the program. Returns the program's
    exit status (1 when it could not be built, 2 on bad usage)."""
    driver = Driver(name)
    # Options it does not know go to the program: no abbreviations of its own
    # that could swallow one of them.
    ap = parser(doc, usage="%(prog)s [--builddir DIR] [" + os.path.basename(program)
                + " options]", allow_abbrev=False)
    add_builddir(ap)
    a, rest = ap.parse_known_args()
    builddir = find_builddir(driver, a.builddir, program)
    make(driver, builddir, [program], program)
    warn_if_asan(driver, builddir)
    start = load_before()
    sys.stdout.flush()
    status = subprocess.run([os.path.join(builddir, program)] + rest).returncode
    load_after(start)
    return status
