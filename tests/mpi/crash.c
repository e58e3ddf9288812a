/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank crashes mid-run (crash.test, 3 ranks on one node): all ranks
 * exchange traffic in a ring with idle gaps (so the link predictor gets
 * something to lower the link for), then rank 1 dies of `raise(SIGSEGV)`
 * (or `abort()` with --abort). Ranks 0 and 2 wait until rank 1's process is
 * gone, keep talking to each other, and leave with exit(0) and without
 * MPI_Finalize, which would wait for the dead peer. What is left to check
 * (the reports, the widths the link was set to) is crash.test's job.
 *
 * Every step is printed, so that when the launcher kills the survivors
 * (hydra does on a death by signal, see crash.test) the log shows where.
 */
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define RING_ROUNDS 40
#define RING_BYTES (64 * 1024)
#define PAIR_ROUNDS 20

static int rank = -1;

static void say(const char *what)
{
    printf("crash: rank %d (pid %ld): %s\n", rank, (long)getpid(), what);
    fflush(stdout);
}

static void fail(const char *what)
{
    fprintf(stderr, "crash: FAIL [rank %d]: %s\n", rank, what);
    fflush(stderr);
    exit(1);
}

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};

    /* hydra's SIGUSR1 (a rank died) interrupts sleeps: sleep the rest */
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

/* True once `pid` has exited (gone, or a zombie not reaped yet). */
static int process_gone(pid_t pid)
{
    char path[64], stat[512];
    FILE *f;
    const char *close;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 1;
    }
    if (fgets(stat, sizeof(stat), f) == NULL) {
        fclose(f);
        return 1;
    }
    fclose(f);
    close = strrchr(stat, ')');
    return close == NULL || close[2] == 'Z' || close[2] == 'X';
}

static void fill(unsigned char *buf, int from, int round)
{
    for (int i = 0; i < RING_BYTES; ++i) {
        buf[i] = (unsigned char)(i * 31 + from * 7 + round);
    }
}

static void check(const unsigned char *buf, int from, int round)
{
    for (int i = 0; i < RING_BYTES; ++i) {
        if (buf[i] != (unsigned char)(i * 31 + from * 7 + round)) {
            fail("received data differs from what was sent");
        }
    }
}

int main(int argc, char **argv)
{
    static unsigned char out[RING_BYTES], in[RING_BYTES];
    int size = 0, use_abort = argc > 1 && strcmp(argv[1], "--abort") == 0;
    long pids[3];
    long me;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size != 3) {
        fail("needs exactly 3 ranks");
    }
    me = (long)getpid();
    MPI_Allgather(&me, 1, MPI_LONG, pids, 1, MPI_LONG, MPI_COMM_WORLD);

    for (int round = 0; round < RING_ROUNDS; ++round) {
        const int next = (rank + 1) % size, prev = (rank + size - 1) % size;

        fill(out, rank, round);
        if (MPI_Sendrecv(out, RING_BYTES, MPI_BYTE, next, round, in, RING_BYTES, MPI_BYTE, prev,
                         round, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            fail("MPI_Sendrecv in the ring failed");
        }
        check(in, prev, round);
        sleep_us(2000); /* idle: the link may go low */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    say("ring done");

    if (rank == 1) {
        sleep_us(20000);
        say(use_abort ? "crashes now (abort)" : "crashes now (SIGSEGV)");
        if (use_abort) {
            abort();
        }
        raise(SIGSEGV);
        fail("survived SIGSEGV");
    }

    for (int waited_ms = 0; !process_gone((pid_t)pids[1]); ++waited_ms) {
        if (waited_ms > 30000) {
            fail("rank 1 is still alive after 30 s");
        }
        sleep_us(1000);
    }
    say("saw rank 1 die; going on with the other survivor");

    for (int round = 0; round < PAIR_ROUNDS; ++round) {
        const int peer = rank == 0 ? 2 : 0;

        fill(out, rank, round);
        if (MPI_Sendrecv(out, RING_BYTES, MPI_BYTE, peer, 1000 + round, in, RING_BYTES, MPI_BYTE,
                         peer, 1000 + round, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            fail("MPI_Sendrecv between the survivors failed");
        }
        check(in, peer, round);
        sleep_us(1000);
    }
    /* MPI_Finalize would wait for rank 1 (UCX flushes every endpoint). */
    say("exits without MPI_Finalize");
    exit(0);
}
