/* SPDX-License-Identifier: BSD-3-Clause */
/* libslimlink loaded with dlopen(), after the C library's free() was bound:
 * free() is then not slimlink's, and the first mark must say so.
 * Usage: free-probe PATH/TO/libslimlink.so; prints what slim_mark_precision
 * returned. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*mark_fn)(const void *, size_t, int, int);

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: free-probe PATH/TO/libslimlink.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        fprintf(stderr, "free-probe: %s\n", dlerror());
        return 2;
    }
    mark_fn mark = (mark_fn)dlsym(lib, "slim_mark_precision");
    if (mark == NULL) {
        fprintf(stderr, "free-probe: no slim_mark_precision in %s\n", argv[1]);
        return 2;
    }
    double *buffer = malloc(64 * sizeof(double));
    printf("slim_mark_precision returned %d\n", mark(buffer, 64 * sizeof(double), 4, 0));
    return 0;
}
