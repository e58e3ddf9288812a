#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""slim-plot: figures of slimlink's replays and reports (slim-plot(1)).

    slim-plot trace FILE [--policy POLICY] [--link SPEC] [--packed] [--gt DURATION]
                         [--window N] [--cpu SPEC] [--cpu-policy POLICY]
                         [-o DIR] [--format png|svg|both]
    slim-plot report REPORT.json [-o DIR] [--format png|svg|both]

`trace` draws, from an event trace and the replays slim-replay makes of it:
  idle-histogram   the idle intervals by length (log-spaced bins), their
                   count and the cumulative share of the idle time, with the
                   grouping threshold (GT) of pps/spps marked (thesis Figs.
                   5.16-5.17);
  energy-vs-gt     pps energy savings and time penalty over a sweep of GTs
                   from 1 us to 5 ms, with spps and the oracle as levels
                   (Fig. 5.14);
  width-over-time  the link's width under POLICY over the last N events, and
                   the bursts with the lanes they need (Fig. 4.37); for a
                   trace with waits, under it the CPU side over the same
                   window: the waits and the emulated core's frequency.
`report` draws, from a JSON report (UCX_SLIM_REPORT=run.json):
  savings          the energy savings of each rank and of each node, with
                   their time penalties;
and from a job record (slimlink-report merge, slimlink.job.v1):
  job              each node's link energy against always-on, its savings
                   and the job's, and the expected nodes without a report.

Every number comes from slim-replay --json (found with --slim-replay PATH,
else next to this script, else in PATH) or from the report itself; slim-plot
only lays them out. Exit status: 0 done, 2 bad command line or bad input
(the message names the file), 1 other errors.
"""
import argparse
import errno
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile

PROGRAM = "slim-plot"
VERSION = "@PACKAGE_VERSION@"
EXIT_FAILURE = 1
EXIT_USAGE = 2

# The energy figure's grouping thresholds (thesis Fig. 5.14), 1 us to 5 ms.
SWEEP_GTS_NS = [1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000,
                500_000, 1_000_000, 2_000_000, 5_000_000]
# The width figure's default window: enough for a few iterations of a
# pattern, few enough that each burst stays visible (on the periodic test
# trace, 40 bursts of 100 us in 40 ms). The last events, not the first:
# spps predicts nothing while ADGT samples its first 500 idle intervals.
DEFAULT_WINDOW = 40
MAX_WINDOW = 1000000  # slim-replay --timeline's bound
# Letter-box figures of 10 x 5.6 in at 100 dpi: 1000 x 560 pixels, which
# stay readable when a slide or a page shrinks them to half.
FIGSIZE = (10, 5.6)
DPI = 100
# Colour-blind safe (Okabe-Ito).
BLUE, ORANGE, GREEN, VERMILION, PURPLE, GREY = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#777777")


class InputError(Exception):
    """Bad input: a message naming the file; exit status 2."""


class Failure(Exception):
    """Anything else that stops slim-plot; exit status 1."""


# ------------------------------------------------------------------ units

def duration(ns):
    """'20 µs', '1.5 ms', '800 ns': a duration for a label, 3 digits at most."""
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(ns) >= scale:
            return "%.3g %s" % (ns / scale, unit)
    return "%.3g ns" % ns


def percent(v):
    return "n/a" if v is None else "%.1f %%" % v


# ------------------------------------------------------------------ slim-replay

def find_slim_replay(given):
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise InputError("--slim-replay %s: not an executable file" % given)
        return given
    here = {os.path.dirname(os.path.abspath(sys.argv[0])),
            os.path.dirname(os.path.realpath(sys.argv[0]))}
    for directory in sorted(here):
        candidate = os.path.join(directory, "slim-replay")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("slim-replay")
    if found:
        return found
    raise Failure("slim-replay is neither next to slim-plot (%s) nor in PATH; "
                  "give its path with --slim-replay PATH" % ", ".join(sorted(here)))


class Replayer:
    """Runs slim-replay --json on one trace with the user's link options."""

    def __init__(self, binary, trace, link, packed, location=None):
        self.binary, self.trace = binary, trace
        self.common = ((["--link", link] if link else []) + (["--packed"] if packed else []) +
                       (["--location", location] if location is not None else []))

    def run(self, *args):
        command = [self.binary, "--events", self.trace, "--json", *self.common, *args]
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, check=False)
        except OSError as e:
            raise Failure("cannot run %s: %s" % (self.binary, e.strerror))
        message = done.stderr.strip().splitlines()
        # slim-replay's own messages name the option or FILE:LINE; its
        # "Try 'slim-replay --help'" would point at the wrong program.
        message = "; ".join(l.replace("slim-replay: ", "", 1) for l in message
                            if not l.startswith("Try "))
        if done.returncode == 2:
            raise InputError(message or "slim-replay refused %s" % self.trace)
        if done.returncode != 0:
            raise Failure("slim-replay failed (exit status %d): %s" % (done.returncode, message))
        try:
            return json.loads(done.stdout.splitlines()[-1])
        except (ValueError, IndexError):
            raise Failure("slim-replay printed no JSON record: %r" % done.stdout[:200])


def policy_args(policy, gt):
    return ["--policy", policy] + (["--gt", gt] if gt else [])


# ------------------------------------------------------------------ trace input

def read_trace(path, name):
    """The idle time before each event but the first, in ns, and the rank's
    waits, its `w t_start_ns t_end_ns` lines (slim-replay has already
    checked the trace, so only the fields we need are read)."""
    idle, waits, previous_end = [], [], None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                fields = line.split("#", 1)[0].split()
                if not fields:
                    continue
                wait = fields[0] == "w"
                first = 1 if wait else 0
                try:
                    start, end = int(fields[first]), int(fields[first + 1])
                except (ValueError, IndexError):
                    raise InputError("%s:%d: not an event (t_start_ns t_end_ns event_id ...) "
                                     "nor a wait (w t_start_ns t_end_ns)" % (name, number))
                if wait:
                    waits.append((start, end))
                    continue
                if previous_end is not None:
                    idle.append(start - previous_end)
                previous_end = end
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (name, e.strerror))
    return idle, waits


def idle_from_bursts(record):
    """The idle time before each event but the first, from a --timeline
    record of the whole trace (its last MAX_WINDOW events at most)."""
    bursts = record["timeline"]["bursts"]
    return [b[0] - a[1] for a, b in zip(bursts, bursts[1:])]


# ------------------------------------------------------------------ figures

def setup_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise Failure("matplotlib is not installed for %s (Debian package python3-matplotlib)"
                      % sys.executable)
    matplotlib.use("Agg")  # files only, no display
    matplotlib.rcParams.update({
        "font.size": 11, "axes.titlesize": 13, "axes.labelsize": 11,
        "legend.fontsize": 10, "axes.spines.top": False, "axes.spines.right": False,
        "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.6,
        # Same bytes for the same figure: no date, fixed SVG ids.
        "svg.hashsalt": "slim-plot", "figure.dpi": DPI, "savefig.dpi": DPI,
    })
    import matplotlib.pyplot as plt
    return plt


def open_figure(path):
    """A figure file opened for writing the way traces and reports are:
    -o may be a shared folder (mode 1777) where another user planted a
    symbolic link to a file of ours, a FIFO (whose open would block), or a
    hard link. A new file is created exclusively; an existing one is used
    only when it is a regular file of this user with one name, checked on
    the descriptor before it is truncated."""
    common = (os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY |
              getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, common | os.O_CREAT | os.O_EXCL, 0o666)
        created = True
    except FileExistsError:
        created = False
        try:
            fd = os.open(path, common)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Failure("cannot write %s: it is a symbolic link; refusing to write "
                              "through it (remove it, or choose another -o)" % path)
            if e.errno == errno.ENXIO:
                raise Failure("cannot write %s: it exists and is not a regular file; "
                              "refusing it" % path)
            raise Failure("cannot write %s: %s" % (path, e.strerror))
    except OSError as e:
        raise Failure("cannot write %s: %s" % (path, e.strerror))
    try:
        st = os.fstat(fd)
        why = None
        if not stat.S_ISREG(st.st_mode):
            why = "it exists and is not a regular file"
        elif st.st_uid != os.geteuid():
            why = "it exists and is owned by uid %d, not by this user (uid %d)" % (
                st.st_uid, os.geteuid())
        elif not created and st.st_nlink > 1:
            why = "it exists with %d hard links" % st.st_nlink
        if why:
            raise Failure("cannot write %s: %s; refusing it" % (path, why))
        os.set_blocking(fd, True)
        if not created:
            os.ftruncate(fd, 0)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


class Writer:
    def __init__(self, plt, directory, formats):
        self.plt, self.directory, self.formats = plt, directory, formats

    def save(self, fig, name):
        for fmt in self.formats:
            path = os.path.join(self.directory, "%s.%s" % (name, fmt))
            metadata = {"Date": None} if fmt == "svg" else {"Software": "slim-plot"}
            try:
                with open_figure(path) as f:
                    fig.savefig(f, format=fmt, metadata=metadata)
            except OSError as e:
                raise Failure("cannot write %s: %s" % (path, e.strerror))
            print("wrote %s" % path)
        self.plt.close(fig)


def titles(fig, ax, title, detail):
    """The figure's title, and under it in small grey the setup it shows
    (constrained layout leaves room for both, unlike free text)."""
    fig.suptitle(title, x=0.01, ha="left", fontsize=13)
    ax.set_title(detail, loc="left", fontsize=10, color=GREY)


def duration_axis(axis):
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis.set_major_locator(LogLocator(base=10, numticks=15))
    axis.set_major_formatter(FuncFormatter(lambda v, _: duration(v)))
    axis.set_minor_formatter(NullFormatter())


def link_text(record):
    link = record["link"]
    packed = ", packed" if record.get("packed") else ""
    if link.get("kind") == "eee":
        return "%sEEE, Tw=%s, Ts=%s, LPI at %g of active power%s" % (
            link["profile"] + ": " if link.get("profile") else "", duration(link["tau_ns"]),
            duration(link.get("sleep_ns", link["tau_ns"])),
            link.get("low_power_fraction", 0.0), packed)
    return "%sL=%d, P=%g W/lane, low=%d, τ=%s%s%s" % (
        link["profile"] + ": " if link.get("profile") else "", link["lanes"], link["lane_watts"],
        link["low_width"], duration(link["tau_ns"]),
        ", low width at %g of full power" % link["low_power_fraction"]
        if link.get("low_power_fraction") is not None else "", packed)


def gt_source(record):
    if record.get("gt_ns") is None:
        return None
    return "fixed, pps" if record["policy"] == "pps" else "tuned by ADGT, spps"


def idle_histogram_figure(plt, idle, gt_record, name):
    positive = [v for v in idle if v > 0]
    fig, counts_ax = plt.subplots(figsize=FIGSIZE, layout="constrained")
    zero = len(idle) - len(positive)
    total = sum(positive)
    titles(fig, counts_ax, "Idle intervals by length — %s" % name,
           "%d idle intervals, %s idle in all%s" % (
               len(positive), duration(total),
               "; %d back-to-back events (idle 0) not counted" % zero if zero else ""))
    if not positive:
        counts_ax.text(0.5, 0.5, "no idle intervals (%d events)" % (len(idle) + bool(idle)),
                       ha="center", va="center", transform=counts_ax.transAxes)
        counts_ax.set_axis_off()
        return fig
    gt_ns = gt_record.get("gt_ns") if gt_record else None
    # Four bins a decade, on whole decades around the data and the GT, at
    # least three decades: a trace whose gaps are all alike is one bar, and
    # the figure still says where it lies.
    marks = positive + ([gt_ns] if gt_ns else [])
    low = math.floor(math.log10(min(marks)))
    high = math.floor(math.log10(max(marks))) + 1
    if high - low < 3:
        low, high = low - (3 - (high - low)) // 2, high + (4 - (high - low)) // 2
    edges = [10 ** (low + i / 4) for i in range(4 * (high - low) + 1)]
    counts = [0] * (len(edges) - 1)
    time_in = [0] * (len(edges) - 1)
    for v in positive:
        b = min(int((math.log10(v) - low) * 4), len(counts) - 1)
        while b > 0 and v < edges[b]:  # rounding of log10 at an edge
            b -= 1
        while b < len(counts) - 1 and v >= edges[b + 1]:
            b += 1
        counts[b] += 1
        time_in[b] += v
    cumulative, running = [], 0
    for t in time_in:
        running += t
        cumulative.append(100.0 * running / total)

    counts_ax.bar(edges[:-1], counts, width=[b - a for a, b in zip(edges, edges[1:])],
                  align="edge", color=BLUE, alpha=0.8, edgecolor="white", linewidth=0.8,
                  label="intervals (count, left axis)")
    counts_ax.set_xscale("log")
    counts_ax.set_xlim(edges[0], edges[-1])
    # One crowded bin would flatten the rest to nothing: then a log scale.
    spread = max(counts) > 100 * min(c for c in counts if c)
    if spread:
        counts_ax.set_yscale("symlog", linthresh=1)
    counts_ax.set_ylim(0, max(counts) * (4 if spread else 1.45))
    counts_ax.set_xlabel("idle interval length (log scale; 4 bins a decade)")
    counts_ax.set_ylabel("idle intervals (count%s)" % (", log scale" if spread else ""))
    duration_axis(counts_ax.xaxis)

    share_ax = counts_ax.twinx()
    share_ax.spines["right"].set_visible(True)
    # Exact at each bin's upper edge (the markers); a line across the bin.
    share_ax.plot(edges, [0] + cumulative, color=VERMILION, linewidth=2, marker="o",
                  markersize=3.5, label="idle time in intervals up to this length\n"
                                        "(cumulative %, right axis)")
    share_ax.set_ylim(0, 105)
    share_ax.set_ylabel("cumulative share of idle time (%)")
    share_ax.grid(False)

    if gt_ns is not None:
        counts_ax.axvline(gt_ns, color=GREEN, linestyle="--", linewidth=2,
                          label="GT = %s (%s)" % (duration(gt_ns), gt_source(gt_record)))
        shorter = [v for v in positive if v <= gt_ns]
        # On the side of the line with more room.
        right = math.log10(gt_ns) < (low + high) / 2
        counts_ax.annotate("intervals ≤ GT join events into grams:\n"
                           "here %d of %d, %.1f %% of the idle time;\n"
                           "the longer ones are what PPS predicts"
                           % (len(shorter), len(positive), 100.0 * sum(shorter) / total),
                           xy=(gt_ns, 0.6), xycoords=("data", "axes fraction"),
                           xytext=(8 if right else -8, 0), textcoords="offset points",
                           ha="left" if right else "right", va="center", fontsize=10,
                           color=GREEN, bbox=dict(boxstyle="round,pad=0.3", fc="white",
                                                  ec=GREEN, alpha=0.9))
    elif gt_record:
        counts_ax.plot([], [], " ", label="no GT: %s" % (
            "ADGT gave up" if gt_record.get("gave_up") else "spps still sampling "
            "(it needs 500 idle intervals)"))
    handles, labels = [], []
    for ax in (counts_ax, share_ax):
        h, l = ax.get_legend_handles_labels()
        handles += h
        labels += l
    counts_ax.legend(handles, labels, loc="upper left", framealpha=0.9)
    # The twin axis would otherwise draw its line under the bars' legend.
    share_ax.set_zorder(counts_ax.get_zorder() - 1)
    counts_ax.patch.set_visible(False)
    return fig


def energy_figure(plt, sweep, oracle, spps, chosen_gt, name, link):
    fig, (save_ax, penalty_ax) = plt.subplots(
        2, 1, figsize=FIGSIZE, sharex=True, layout="constrained",
        gridspec_kw={"height_ratios": [2.2, 1]})
    titles(fig, save_ax, "PPS energy savings and time penalty against the grouping "
           "threshold — %s" % name, "%d events; link %s" % (oracle["events"], link))
    gts = [r["gt"] for r in sweep]
    savings = [r["energy_savings_pct"] for r in sweep]
    penalties = [r["time_penalty_pct"] for r in sweep]
    save_ax.plot(gts, savings, color=BLUE, marker="o", linewidth=2, label="pps at this GT")
    levels = [(oracle, "oracle", "--", VERMILION), (spps, "spps", ":", GREEN)]
    for record, label, style, colour in levels:
        v = record["energy_savings_pct"]
        if v is None:
            continue
        text = "%s: %s" % (label, percent(v))
        if label == "spps":
            text += (", GT %s" % duration(record["gt_ns"]) if record["gt_ns"] is not None
                     else ", no GT (still sampling)")
        save_ax.axhline(v, color=colour, linestyle=style, linewidth=2, label=text)
    if spps["gt_ns"] is not None and spps["energy_savings_pct"] is not None:
        save_ax.plot([spps["gt_ns"]], [spps["energy_savings_pct"]], marker="v", color=GREEN,
                     markersize=10, linestyle="none", label="the GT spps chose")
    if chosen_gt is not None:
        for ax in (save_ax, penalty_ax):
            ax.axvline(chosen_gt, color=GREY, linewidth=1)
        save_ax.annotate("--gt %s" % duration(chosen_gt), xy=(chosen_gt, 0.98),
                         xycoords=("data", "axes fraction"), xytext=(4, 0),
                         textcoords="offset points", va="top", color=GREY, fontsize=9)
    top = max([v for v in savings + [oracle["energy_savings_pct"], spps["energy_savings_pct"]]
               if v is not None] + [1.0])
    save_ax.set_ylim(min(0, min(v for v in savings if v is not None) if any(
        v is not None for v in savings) else 0), top * 1.15)
    save_ax.set_ylabel("energy savings (%)")
    save_ax.legend(loc="lower left", framealpha=0.9)
    if all(v is None for v in savings):
        save_ax.text(0.5, 0.5, "nothing to save: the trace spans no time (%d events)"
                     % oracle["events"], ha="center", va="center", transform=save_ax.transAxes)

    penalty_ax.plot(gts, penalties, color=ORANGE, marker="s", linewidth=2,
                    label="pps time penalty", clip_on=False, zorder=3)
    if spps["time_penalty_pct"] is not None:
        penalty_ax.axhline(spps["time_penalty_pct"], color=GREEN, linestyle=":", linewidth=2,
                           label="spps: %.2f %%" % spps["time_penalty_pct"])
    penalty_ax.set_ylim(0, max([p for p in penalties if p is not None] + [0.1]) * 1.3)
    penalty_ax.set_ylabel("time penalty (%)")
    penalty_ax.set_xlabel("grouping threshold GT (log scale)")
    penalty_ax.set_xscale("log")
    penalty_ax.set_xlim(min(gts) / 1.4, max(gts) * 1.4)
    duration_axis(penalty_ax.xaxis)
    penalty_ax.legend(loc="upper left", framealpha=0.9)
    return fig


def cpu_policy_text(cpu):
    if cpu["policy"] == "timeout":
        return "timeout after %s" % duration(cpu["timeout_ns"])
    if cpu.get("policy_in_force"):
        return "%s (in force at the end: %s)" % (cpu["policy"], cpu["policy_in_force"])
    return cpu["policy"]


def core_frequency(periods, f, f_low, start, end):
    """The core's frequency as a line from `start` to `end`: f outside the
    periods, falling over a transition down, f_low while low, rising over
    a transition up (the model's transitions take tau and draw full power;
    the line shows when the frequency changes)."""
    ts, ghz = [start], [f]
    for a, b, state in sorted(periods, key=lambda p: (p[0], p[1])):
        before, after = {"down": (f, f_low), "low": (f_low, f_low), "up": (f_low, f)}[state]
        ts += [a, b]
        ghz += [before, after]
    ts.append(max(end, ts[-1]))
    ghz.append(f)
    return ts, ghz


def draw_width(ax, record, waits):
    """The link's usable width and the bursts of a --timeline record on `ax`;
    None when the window has no events, else what the caller needs to draw
    on the same time axis: (x, least, origin, end, unit, waits shown)."""
    timeline = record["timeline"]
    lanes = record["link"]["lanes"]
    eee = record["link"].get("kind") == "eee"
    steps, bursts = timeline["steps"], timeline["bursts"]
    if not steps:
        ax.text(0.5, 0.5, "no events", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return None
    origin = steps[0][0]
    end = max([b[1] for b in bursts] + [steps[-1][0]])
    span = max(end - origin, 1)
    scale, unit = ((1e3, "µs") if span < 2e6 else (1e6, "ms") if span < 2e9 else (1e9, "s"))
    x = lambda t: (t - origin) / scale  # noqa: E731
    # Each burst as high as the lanes it needs.
    # Each at least 1.5 pixels wide, or 100 us in 40 ms would vanish.
    least = x(end) * 1.5 / (FIGSIZE[0] * DPI)
    ax.bar([x(b[0]) for b in bursts], [b[2] for b in bursts],
           width=[max(x(b[1]) - x(b[0]), least) for b in bursts], align="edge", color=ORANGE,
           alpha=0.9, linewidth=0, zorder=3,
           label="bursts" if eee else "bursts (height: the lanes they need)")
    xs = [x(s[0]) for s in steps] + [x(end)]
    ws = [s[1] for s in steps] + [steps[-1][1]]
    ax.step(xs, ws, where="post", color=BLUE, linewidth=1.8, zorder=2,
            label="port state" if eee else "usable link width")
    # The area under it is what the lanes draw: the energy the figure is about.
    ax.fill_between(xs, ws, step="post", color=BLUE, alpha=0.12, linewidth=0, zorder=1)
    # The rank's waits in the window, shaded behind the rest: where the CPU
    # side may lower the core. From the CPU replay when there is one (in
    # replayed time, as the width); else as recorded (a penalty shifts the
    # width by at most that penalty).
    shown = [(max(a, origin), min(b, end)) for a, b in waits if b > origin and a < end]
    for i, (a, b) in enumerate(shown):
        ax.axvspan(x(a), max(x(b), x(a) + least), color=GREY, alpha=0.25, linewidth=0, zorder=0,
                   label="waits (the rank in MPI, nothing arriving)" if i == 0 else None)
    ax.set_xlim(0, x(end))
    ax.set_ylim(0, lanes * 1.3)
    ax.set_yticks(range(0, lanes + 1))
    if eee:
        ax.set_yticklabels(["LPI", "active"])
    ax.set_ylabel("port state (EEE)" if eee else "link width (lanes)")
    return x, least, origin, end, unit, shown


def width_figure(plt, record, policy_label, name, waits=(), cpu_record=None):
    timeline = record["timeline"]
    cpu = cpu_record["timeline"].get("cpu") if cpu_record else None
    if cpu is not None:
        fig, (ax, core_ax) = plt.subplots(2, 1, figsize=FIGSIZE, sharex=True,
                                          layout="constrained",
                                          gridspec_kw={"height_ratios": [2.2, 1]})
    else:
        fig, ax = plt.subplots(figsize=FIGSIZE, layout="constrained")
    total = record["events"]
    window = ("all %d events" % total if timeline["first_event"] <= 1
              else "events %d–%d of %d" % (timeline["first_event"],
                                           timeline["first_event"] + timeline["events"] - 1,
                                           total))
    titles(fig, ax, "Link width over time — %s, policy %s" % (name, policy_label),
           "%s; link %s; over the whole trace: savings %s, time penalty %s"
           % (window, link_text(record), percent(record["energy_savings_pct"]),
              percent(record["time_penalty_pct"])))
    drawn = draw_width(ax, record, waits if cpu is None else cpu["waits"])
    if drawn is None:
        return fig
    x, least, origin, end, unit, shown = drawn
    ax.legend(loc="upper right", framealpha=0.95, ncol=2)
    if cpu is None:
        ax.set_xlabel("time from the window's start (%s, replayed)" % unit)
        return fig
    # The CPU side on the same time axis: the waits, and the emulated core's
    # frequency under the CPU policy (slim-replay --cpu, its timeline).
    summary, core = cpu_record["cpu"], cpu_record["cpu"]["core"]
    f, f_low = core["f_ghz"], core["f_low_ghz"]
    for i, (a, b) in enumerate(shown):
        core_ax.axvspan(x(a), max(x(b), x(a) + least), color=GREY, alpha=0.25, linewidth=0,
                        zorder=0, label="waits" if i == 0 else None)
    ts, ghz = core_frequency(cpu["core"], f, f_low, origin, end)
    core_ax.plot([x(t) for t in ts], ghz, color=GREEN, linewidth=1.6, zorder=2,
                 label="core frequency (emulated)")
    inside = lambda a, b: max(0, min(b, end) - max(a, origin))  # noqa: E731
    waited = sum(inside(a, b) for a, b in cpu["waits"])
    lowered = sum(inside(a, b) for a, b, state in cpu["core"] if state == "low")
    core_ax.set_title("CPU, policy %s: low %s of the %s waited in the window;\nover the whole "
                      "trace saved %s of the rank's CPU energy (oracle %s), penalty %s"
                      % (cpu_policy_text(summary), duration(lowered), duration(waited),
                         percent(summary.get("saved_pct")),
                         percent(summary.get("oracle_saved_pct")),
                         percent(summary.get("penalty_pct"))),
                      loc="left", fontsize=9, color=GREY)
    core_ax.set_ylim(0, f * 1.5)
    core_ax.set_yticks(sorted({f_low, f}))
    core_ax.set_yticklabels(["%g GHz" % v for v in sorted({f_low, f})])
    core_ax.set_ylabel("core frequency")
    core_ax.set_xlabel("time from the window's start (%s, replayed)" % unit)
    core_ax.legend(loc="upper right", framealpha=0.95, ncol=2, fontsize=9)
    return fig


def compare_figure(plt, records, policy_label, name):
    """The same trace and policy on two links, side by side: each panel its
    own replayed time (late wake-ups shift each differently)."""
    fig, axes = plt.subplots(1, 2, figsize=(FIGSIZE[0] * 1.6, FIGSIZE[1]), layout="constrained")
    fig.suptitle("The same trace on two links — %s, policy %s" % (name, policy_label),
                 fontsize=12, fontweight="bold")
    for ax, record in zip(axes, records):
        ax.set_title("%s\nsavings %s, time penalty %s, late wake-ups %d"
                     % (link_text(record), percent(record["energy_savings_pct"]),
                        percent(record["time_penalty_pct"]), record["late_wakeups"]),
                     loc="left", fontsize=9, color=GREY)
        drawn = draw_width(ax, record, ())
        if drawn is not None:
            ax.set_xlabel("time from the window's start (%s, replayed)" % drawn[4])
            ax.legend(loc="upper right", framealpha=0.95, fontsize=8)
    return fig


# ------------------------------------------------------------------ reports

# The fields the figure reads, and the JSON types it can draw (None: null).
INTEGER, STRING, NUMBER, LIST, OBJECT = "an integer", "a string", "a number", "a list", \
    "an object"
RANK_FIELDS = {"rank": (INTEGER,), "host": (STRING,), "pid": (INTEGER,),
               "link": (OBJECT, None)}
LINK_FIELDS = {"energy_savings_pct": (NUMBER, None), "time_penalty_pct": (NUMBER, None),
               "events": (INTEGER,)}
LINK_OPTIONAL = {"predictor": (STRING,), "policy_in_force": (STRING, None)}
NODE_FIELDS = {"host": (STRING,), "job": (STRING, None), "local_size": (INTEGER,),
               "ranks_reported": (INTEGER,), "ranks_missing": (LIST,), "totals": (OBJECT,)}
TOTALS_FIELDS = {"energy_savings_pct": (NUMBER, None), "time_penalty_pct_max": (NUMBER, None)}
# A job record (slimlink-report merge, slimlink.job.v1).
JOB_FIELDS = {"job": (STRING,), "nodes": (LIST,), "totals": (OBJECT,), "missing_nodes": (LIST,),
              "expected_nodes": (LIST, None), "missing_ranks": (LIST,)}
JOB_NODE_FIELDS = {"host": (STRING,), "local_size": (INTEGER,), "ranks_reported": (INTEGER,),
                   "ranks_missing": (LIST,), "energy_joules": (NUMBER, None),
                   "baseline_joules": (NUMBER, None), "energy_savings_pct": (NUMBER, None),
                   "time_penalty_pct_max": (NUMBER, None)}
JOB_TOTALS_FIELDS = {"energy_joules": (NUMBER, None), "baseline_joules": (NUMBER, None),
                     "energy_savings_pct": (NUMBER, None), "time_penalty_pct_max": (NUMBER, None),
                     "time_penalty_pct_mean": (NUMBER, None)}


def reject_constant(name):
    # json.loads takes NaN, Infinity and -Infinity, which JSON does not have
    # and no axis can show.
    raise ValueError("%s is not a JSON number" % name)


def parse_json(text):
    return json.loads(text, parse_constant=reject_constant)


def read_report(path):
    """The rank, node and job records of a JSON Lines report (or of a job
    record slimlink-report merge wrote)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError("%s: cannot read: %s" % (path, getattr(e, "strerror", None) or e))
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((number, parse_json(line)))
        except RecursionError:
            raise InputError("%s:%d: not a report record: JSON nested too deeply" % (path, number))
        except ValueError as e:
            # A report pretty-printed by hand (jq .) is one JSON value.
            try:
                whole = parse_json(text)
            except (ValueError, RecursionError):
                raise InputError("%s:%d: not a JSON record: %s" % (path, number, e))
            records = [(1, r) for r in (whole if isinstance(whole, list) else [whole])]
            break
    ranks, nodes, jobs = [], [], []
    for number, r in records:
        where = "%s:%d" % (path, number)
        if not isinstance(r, dict):
            raise InputError("%s: a record is a JSON object, not %s" % (where, type(r).__name__))
        schema = r.get("schema")
        if schema == "slimlink.report.v1":
            require(r, RANK_FIELDS, where, schema)
            if r["link"] is not None:
                require(r["link"], LINK_FIELDS, where, schema + " link", LINK_OPTIONAL)
            ranks.append(r)
        elif schema == "slimlink.node.v1":
            require(r, NODE_FIELDS, where, schema)
            require(r["totals"], TOTALS_FIELDS, where, schema + " totals")
            nodes.append(r)
        elif schema == "slimlink.job.v1":
            require(r, JOB_FIELDS, where, schema)
            require(r["totals"], JOB_TOTALS_FIELDS, where, schema + " totals")
            for i, n in enumerate(r["nodes"]):
                require(n, JOB_NODE_FIELDS, where, "%s nodes[%d]" % (schema, i))
            for i, h in enumerate(r["missing_nodes"]):
                if not isinstance(h, str):
                    raise InputError("%s: %s missing_nodes[%d] is not a string" % (where, schema, i))
            jobs.append(r)
    if not ranks and not nodes and not jobs:
        raise InputError("%s: no slimlink.report.v1 or slimlink.node.v1 records, nor a "
                         "slimlink.job.v1 record (a report is written with "
                         "UCX_SLIM_REPORT=FILE.json, a job record by slimlink-report merge)"
                         % path)
    return ranks, nodes, jobs


def json_type(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return INTEGER
    if isinstance(v, float):
        return NUMBER
    if isinstance(v, str):
        return STRING
    if isinstance(v, list):
        return LIST
    return OBJECT


def require(record, fields, where, what, optional=None):
    """Every field of `fields` is in `record` with one of its types; so is
    each field of `optional` that is present."""
    if not isinstance(record, dict):
        raise InputError("%s: %s is not an object" % (where, what))
    missing = [f for f in fields if f not in record]
    if missing:
        raise InputError("%s: %s record without %s" % (where, what, ", ".join(missing)))
    checked = dict(fields)
    checked.update({f: t for f, t in (optional or {}).items() if f in record})
    for f, accepted in checked.items():
        v = record[f]
        kind = json_type(v)
        if kind == NUMBER and not math.isfinite(v):
            # 1e400 parses as infinity; no axis can show it.
            raise InputError("%s: %s field %s is %r, not a finite number" % (where, what, f, v))
        if kind in accepted or (kind == INTEGER and NUMBER in accepted):
            continue
        names = [a if a is not None else "null" for a in accepted]
        # repr() escapes control characters: a value never reaches the
        # terminal raw. Long values are cut.
        shown = repr(v)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise InputError("%s: %s field %s is %s, not %s" % (
            where, what, f, shown if kind is not None else "null", " or ".join(names)))


def bar_chart(ax, labels, values, penalties, colours, title, ylabel):
    positions = list(range(len(labels)))
    heights = [v if v is not None else 0 for v in values]
    ax.bar(positions, heights, color=colours, width=0.6, edgecolor="white")
    # At least three bars' room: one node's bar is not a wall.
    pad = max(0.0, (3 - len(labels)) / 2)
    ax.set_xlim(-0.5 - pad, len(labels) - 0.5 + pad)
    ax.set_xticks(positions)
    ax.set_xticklabels(labels, rotation=0 if len(labels) <= 8 else 60,
                       ha="center" if len(labels) <= 8 else "right",
                       fontsize=10 if len(labels) <= 16 else 8)
    ax.set_title(title, loc="left", fontsize=11)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(axis="x", visible=False)
    if len(labels) > 32:
        return  # too many bars for a label on each
    label_savings(ax, positions, values, penalties, len(labels), "no savings\nmeasured")


def label_savings(ax, positions, values, penalties, bars, unmeasured):
    """Writes each bar's savings (or `unmeasured`) and its penalty above it,
    smaller when there are more than 16 `bars`."""
    for position, v, p in zip(positions, values, penalties):
        text = unmeasured if v is None else "%.1f %%" % v
        if p is not None:
            text += "\n(penalty %.2f %%)" % p
        ax.annotate(text, xy=(position, max(v or 0, 0)), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom",
                    fontsize=9 if bars <= 16 else 7)


def report_figure(plt, ranks, nodes, name):
    hosts = []  # in the order the file names them
    for record in ranks + nodes:
        if record["host"] not in hosts:
            hosts.append(record["host"])
    palette = [BLUE, ORANGE, GREEN, PURPLE, VERMILION, GREY]
    colour_of = {h: palette[i % len(palette)] for i, h in enumerate(hosts)}
    panels = (1 if ranks else 0) + (1 if nodes else 0)
    ratios = [max(len(ranks), 3)] if ranks else []
    ratios += [max(len(nodes), 3)] if nodes else []
    fig, axes = plt.subplots(1, panels, figsize=FIGSIZE, layout="constrained", sharey=True,
                             gridspec_kw={"width_ratios": ratios}, squeeze=False)
    axes = list(axes[0])
    fig.suptitle("Link energy savings by rank and by node — %s" % name, x=0.01, ha="left",
                 fontsize=13)
    values = [(r["link"] or {}).get("energy_savings_pct") for r in ranks]
    values += [n["totals"]["energy_savings_pct"] for n in nodes]
    values = [v for v in values if v is not None] + [1.0]
    # Shared by both panels; room above the bars for their labels.
    axes[0].set_ylim(min(0, min(values) * 1.2), max(values) * 1.25)
    if ranks:
        ranks = sorted(ranks, key=lambda r: (r["rank"], r["pid"]))
        seen = {}
        for r in ranks:
            seen[(r["host"], r["rank"])] = seen.get((r["host"], r["rank"]), 0) + 1
        labels = []
        for r in ranks:
            label = "rank %d" % r["rank"] if r["rank"] >= 0 else "pid %d" % r["pid"]
            if seen[(r["host"], r["rank"])] > 1:  # several runs in one file
                label += "\npid %d" % r["pid"]
            if len(hosts) > 1:
                label += "\n" + r["host"]
            labels.append(label)
        link = [r["link"] or {} for r in ranks]
        bar_chart(axes[0], labels, [l.get("energy_savings_pct") for l in link],
                  [l.get("time_penalty_pct") for l in link],
                  [colour_of[r["host"]] for r in ranks],
                  "per rank (%d)" % len(ranks), "energy savings (%)")
        policies = sorted({"%s%s" % (l.get("predictor", "?"), " (in force at the end: %s)"
                                     % l["policy_in_force"] if l.get("policy_in_force") and
                                     len(ranks) == 1 else "") for l in link if l})
        axes[0].set_xlabel("predictor: %s%s" % (", ".join(policies), (
            "; no savings measured: the rank's link loop did not run"
            if any(r["link"] is None for r in ranks) else "")))
    if nodes:
        ax = axes[-1]
        labels = []
        for n in nodes:
            label = "%s\n%d of %d ranks" % (n["host"], n["ranks_reported"], n["local_size"])
            if n["ranks_missing"]:
                label += "\n%d missing" % len(n["ranks_missing"])
            labels.append(label)
        bar_chart(ax, labels, [n["totals"]["energy_savings_pct"] for n in nodes],
                  [n["totals"]["time_penalty_pct_max"] for n in nodes],
                  [colour_of[n["host"]] for n in nodes], "per node (%d)" % len(nodes),
                  "" if ranks else "energy savings (%)")
        ax.set_xlabel("savings over the node's summed energy;\npenalty: its worst rank's")
    return fig


def job_figure(plt, job, name):
    """A job record: per node, the port's energy against always-on (top) and
    the savings (bottom); expected nodes without a node report are marked."""
    nodes = job["nodes"]
    missing = job["missing_nodes"]
    labels = ["%s\n%d of %d ranks" % (n["host"], n["ranks_reported"], n["local_size"])
              for n in nodes] + ["%s\nno report" % h for h in missing]
    count = len(labels)
    positions = list(range(count))
    t = job["totals"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(FIGSIZE[0], FIGSIZE[1] * 1.35),
                                      layout="constrained", sharex=True)
    title = "Link energy of job %s — %s" % (job["job"] if len(job["job"]) <= 48
                                            else job["job"][:45] + "...", name)
    fig.suptitle(title, x=0.01, ha="left", fontsize=13)
    width = 0.38
    energy = [n["energy_joules"] for n in nodes]
    baseline = [n["baseline_joules"] for n in nodes]
    top.bar([p - width / 2 for p in positions[:len(nodes)]], [b or 0 for b in baseline],
            width=width, color=GREY, label="always on")
    top.bar([p + width / 2 for p in positions[:len(nodes)]], [e or 0 for e in energy],
            width=width, color=BLUE, label="with slimlink")
    tallest = max([b for b in baseline if b is not None] + [e for e in energy if e is not None]
                  + [1e-9])
    for p in positions[len(nodes):]:
        # A node with no report: an empty hatched slot as tall as the
        # tallest bar, so that it cannot be read as a node that used nothing.
        top.bar(p, tallest, width=2 * width, fill=False, hatch="//", edgecolor=VERMILION,
                linewidth=0.8)
        bottom.bar(p, 0, width=2 * width)
    top.set_ylabel("link energy (J)")
    top.set_ylim(0, tallest * 1.3)
    top.legend(loc="upper right", fontsize=9)
    if t["energy_joules"] is not None:
        top.set_title("job: %.3f J of %.3f J always on over %d of %d ports that measure energy"
                      % (t["energy_joules"], t["baseline_joules"], t.get("energy_nodes", len(nodes)),
                         len(nodes)), loc="left", fontsize=11)
    else:
        top.set_title("no port of the job measures energy", loc="left", fontsize=11)
    savings = [n["energy_savings_pct"] for n in nodes]
    penalties = [n["time_penalty_pct_max"] for n in nodes]
    bottom.bar(positions[:len(nodes)], [v or 0 for v in savings], width=0.6,
               color=[GREEN if v is not None else GREY for v in savings])
    drawn = [v for v in savings if v is not None] + [1.0]
    bottom.set_ylim(min(0, min(drawn) * 1.2), max(drawn) * 1.3)
    if t["energy_savings_pct"] is not None:
        bottom.axhline(t["energy_savings_pct"], color=ORANGE, linewidth=1.2,
                       label="job: %.1f %% (from the summed energy)" % t["energy_savings_pct"])
        bottom.legend(loc="upper right", fontsize=9)
    bottom.set_ylabel("energy savings (%)")
    penalty = t["time_penalty_pct_max"]
    bottom.set_title("savings per node; penalty: the node's worst rank's%s" % (
        "; job's worst rank %.2f %%, mean %.2f %%" % (penalty, t["time_penalty_pct_mean"])
        if penalty is not None and t["time_penalty_pct_mean"] is not None else ""),
        loc="left", fontsize=11)
    if count <= 32:
        label_savings(bottom, positions, savings, penalties, count, "not\nmeasured")
        for p in positions[len(nodes):]:
            bottom.annotate("missing", xy=(p, 0), xytext=(0, 3), textcoords="offset points",
                            ha="center", va="bottom", color=VERMILION,
                            fontsize=9 if count <= 16 else 7)
    pad = max(0.0, (3 - count) / 2)
    bottom.set_xlim(-0.5 - pad, count - 0.5 + pad)
    bottom.set_xticks(positions)
    bottom.set_xticklabels(labels, rotation=0 if count <= 8 else 60,
                           ha="center" if count <= 8 else "right",
                           fontsize=10 if count <= 16 else 8)
    for ax in (top, bottom):
        ax.grid(axis="x", visible=False)
    notes = []
    if missing:
        notes.append("%d expected node%s without a report (hatched)"
                     % (len(missing), "" if len(missing) == 1 else "s"))
    if job["missing_ranks"]:
        notes.append("%d rank%s missing" % (len(job["missing_ranks"]),
                                           "" if len(job["missing_ranks"]) == 1 else "s"))
    if job["expected_nodes"] is None:
        notes.append("expected nodes not given: missing nodes not checked")
    if notes:
        bottom.set_xlabel("; ".join(notes))
    return fig


# ------------------------------------------------------------------ commands

def command_trace(args, plt, writer):
    if args.trace == "-":
        # slim-replay reads the trace several times: keep standard input.
        kept = tempfile.NamedTemporaryFile("w", prefix="slim-plot-", suffix=".trace",
                                           delete=False)
        with kept:
            shutil.copyfileobj(sys.stdin, kept)
        path, name = kept.name, "<stdin>"
    else:
        path, name = args.trace, os.path.basename(args.trace.rstrip("/")) or args.trace
    try:
        replay = Replayer(find_slim_replay(args.slim_replay), path, args.link, args.packed,
                          args.location)
        # The user's policy first: it checks the trace and the options.
        main = replay.run(*policy_args(args.policy, args.gt), "--timeline", str(args.window))
        spps = main if args.policy == "spps" else replay.run("--policy", "spps")
        otf2 = path.endswith(".otf2")
        # An OTF2 archive's events come from slim-replay's reader: the
        # oracle never delays a burst, so its bursts are the events.
        oracle = replay.run("--policy", "oracle",
                            *(["--timeline", str(MAX_WINDOW)] if otf2 else []))
        gts = sorted(set(SWEEP_GTS_NS) | ({main["gt_ns"]} if args.policy == "pps" else set()))
        sweep = [dict(replay.run("--policy", "pps", "--gt", "%dns" % gt), gt=gt) for gt in gts]
        idle, waits = (idle_from_bursts(oracle), []) if otf2 else read_trace(path, args.trace)
        # The CPU side over the width figure's window, in the same replayed
        # time: one more replay, only for a trace with waits (--cpu keeps
        # every event in memory).
        cpu = None
        if waits:
            cpu = replay.run(*policy_args(args.policy, args.gt), "--timeline", str(args.window),
                             "--cpu" + ("=" + args.cpu if args.cpu else ""),
                             *(["--cpu-policy", args.cpu_policy] if args.cpu_policy else []))
        # --compare-link: the same replay on a second link.
        compare = None
        if args.compare_link:
            other = Replayer(replay.binary, path, args.compare_link, args.packed, args.location)
            compare = other.run(*policy_args(args.policy, args.gt), "--timeline",
                                str(args.window))
    finally:
        if args.trace == "-":
            os.unlink(path)
    gt_record = main if args.policy in ("pps", "spps") else spps
    if main["policy"] == "timeout":
        policy_label = "timeout after %s" % duration(main["timeout_ns"])
    elif main["policy"] == "adaptive":
        policy_label = "adaptive (in force at the end: %s)" % main["policy_in_force"]
    elif gt_source(main):
        policy_label = "%s, GT %s" % (main["policy"], duration(main["gt_ns"]))
    else:
        policy_label = main["policy"]
    os.makedirs(args.output, exist_ok=True)
    writer.save(idle_histogram_figure(plt, idle, gt_record, name), "idle-histogram")
    writer.save(energy_figure(plt, sweep, oracle, spps,
                              main["gt_ns"] if args.policy == "pps" else None, name,
                              link_text(main)), "energy-vs-gt")
    writer.save(width_figure(plt, main, policy_label, name, waits, cpu), "width-over-time")
    if compare is not None:
        writer.save(compare_figure(plt, [main, compare], policy_label, name), "link-compare")


def command_report(args, plt, writer):
    ranks, nodes, jobs = read_report(args.report)
    os.makedirs(args.output, exist_ok=True)
    name = os.path.basename(args.report)
    if ranks or nodes:
        writer.save(report_figure(plt, ranks, nodes, name), "savings")
    for i, job in enumerate(jobs, 1):
        writer.save(job_figure(plt, job, name), "job" if len(jobs) == 1 else "job-%d" % i)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write("%s: %s\nTry '%s --help'.\n" % (PROGRAM, message, PROGRAM))
        sys.exit(EXIT_USAGE)


def window(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 1_000_000:
        raise argparse.ArgumentTypeError("'%s': accepted values are integers from 1 to 1000000"
                                         % text)
    return n


def parse_arguments(argv):
    p = Parser(prog=PROGRAM, description="Figures of slimlink's trace replays and reports, "
               "as PNG or SVG files. Exit status: 0 done, 2 bad command line or bad input, "
               "1 other errors.")
    p.add_argument("--version", action="version", version="%s %s" % (PROGRAM, VERSION))
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    def common(q):
        q.add_argument("-o", "--output", metavar="DIR", default=".",
                       help="directory for the figures, created if missing (default: .)")
        q.add_argument("--format", choices=("png", "svg", "both"), default="png",
                       help="png (1000x560 pixels, default), svg (vector, text as paths), "
                            "or both")

    t = sub.add_parser("trace", help="idle-histogram, energy-vs-gt and width-over-time of an "
                       "event trace", description="Replays an event trace with slim-replay "
                       "(about 15 times: the sweep of 12 GTs, the oracle, spps, your policy) "
                       "and draws idle-histogram, energy-vs-gt and width-over-time.")
    t.add_argument("trace", metavar="FILE", help="event trace (slim-replay's format; - is "
                   "standard input), or an OTF2 archive's anchor file FILE.otf2")
    t.add_argument("--location", metavar="N", help="OTF2 only: the location to draw, as "
                   "slim-replay --location (default: the first MPI location)")
    t.add_argument("--policy", default="spps", help="the policy whose GT the histogram marks "
                   "and whose width is drawn, as slim-replay --policy (default spps)")
    t.add_argument("--gt", metavar="DURATION", help="with --policy pps: its fixed GT, e.g. 20us")
    t.add_argument("--link", metavar="SPEC", help="the link, as slim-replay --link (default "
                   "L=4,P=0.5,low=1,tau=10us) or a preset such as ib-hdr or eee-10gbase-t; "
                   "used by every replay")
    t.add_argument("--compare-link", metavar="SPEC", help="a second link: link-compare.png "
                   "draws the policy's width over time on --link and on this one side by side")
    t.add_argument("--packed", action="store_true", help="as slim-replay --packed")
    t.add_argument("--window", metavar="N", type=window, default=DEFAULT_WINDOW,
                   help="width-over-time shows the last N events (default %d)"
                   % DEFAULT_WINDOW)
    t.add_argument("--cpu", metavar="SPEC", help="a trace with waits: the emulated core, as "
                   "slim-replay --cpu=SPEC (default: slim-replay's)")
    t.add_argument("--cpu-policy", metavar="POLICY", help="a trace with waits: the core's "
                   "policy, as slim-replay --cpu-policy (default adaptive)")
    t.add_argument("--slim-replay", metavar="PATH", help="the slim-replay to run (default: "
                   "the one next to slim-plot, else the one in PATH)")
    common(t)
    r = sub.add_parser("report", help="savings per rank and per node of a JSON report, or a "
                       "job's energy per node", description="Draws savings: the energy "
                       "savings and time penalty of each rank (slimlink.report.v1 records) and "
                       "each node (slimlink.node.v1) of a report written with "
                       "UCX_SLIM_REPORT=FILE.json; and job, from a job record (slimlink.job.v1, "
                       "written by slimlink-report merge): each node's link energy against "
                       "always-on, its savings and the job's, expected nodes without a report "
                       "marked.")
    r.add_argument("report", metavar="REPORT", help="JSON Lines report, or a job record")
    common(r)
    return p.parse_args(argv)


def main(argv):
    args = parse_arguments(argv)
    formats = ["png", "svg"] if args.format == "both" else [args.format]
    try:
        if os.path.exists(args.output) and not os.path.isdir(args.output):
            raise InputError("-o %s: not a directory" % args.output)
        plt = setup_matplotlib()
        writer = Writer(plt, args.output, formats)
        if args.command == "trace":
            command_trace(args, plt, writer)
        else:
            command_report(args, plt, writer)
    except InputError as e:
        sys.stderr.write("%s: %s\n" % (PROGRAM, e))
        return EXIT_USAGE
    except (Failure, OSError) as e:
        sys.stderr.write("%s: %s\n" % (PROGRAM, e))
        return EXIT_FAILURE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
