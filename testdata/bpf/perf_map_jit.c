/* A JIT in miniature: copies a compiled loop into anonymous memory, names it
   `jitted_spin` in /tmp/perf-PID.map as a JIT does, and runs it ARGV[1] times round. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) unsigned long spin(unsigned long n) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) {
        s += i ^ (s >> 3);
        __asm__ volatile("" : "+r"(s));
    }
    return s;
}

int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 1000;
    unsigned char *page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(page, (void *)spin, 256);
    mprotect(page, 4096, PROT_READ | PROT_EXEC);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
    FILE *f = fopen(path, "w");
    fprintf(f, "%lx 100 jitted_spin\n", (unsigned long)page);
    fclose(f);
    unsigned long (*jitted)(unsigned long) = (void *)page;
    printf("%d %lu\n", getpid(), jitted(n));
    return 0;
}
