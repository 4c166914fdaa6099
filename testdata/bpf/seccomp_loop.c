/* getpid in a loop for ARGV[1] seconds under a seccomp filter that reads an argument
   (so the kernel's per-syscall cache cannot skip it) and compares it 64 times. */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CMP(k) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1)
#define CMP4(k) CMP(k), CMP(k + 1), CMP(k + 2), CMP(k + 3)
#define CMP16(k) CMP4(k), CMP4(k + 4), CMP4(k + 8), CMP4(k + 12)

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        CMP16(0x5ec0000), CMP16(0x5ec0010), CMP16(0x5ec0020), CMP16(0x5ec0030),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof(code) / sizeof(code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
        perror("seccomp");
        return 1;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long n = 0;
    for (;;) {
        for (int i = 0; i < 4096; i++)
            syscall(SYS_getpid, 0);
        n += 4096;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 >= seconds)
            break;
    }
    printf("%lu getpid calls\n", n);
    return 0;
}
