/* Loads an eBPF socket filter named upcmp_spin with bpf(2) (a loop of ARGV[2]
   additions a packet, then the packet dropped), attaches it to a UDP socket on the
   loopback, sends it packets for ARGV[1] seconds, and unloads it: the socket and the
   program closed, then a pause while the kernel frees the program. */
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ATTACH_BPF
#define SO_ATTACH_BPF 50
#endif

static struct bpf_insn insn(unsigned char code, int dst, int src, short off, int imm) {
    struct bpf_insn i = {code, dst, src, off, imm};
    return i;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    struct bpf_insn prog[] = {
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, rounds),
        insn(BPF_ALU64 | BPF_ADD | BPF_X, 0, 1, 0, 0),
        insn(BPF_ALU64 | BPF_SUB | BPF_K, 1, 0, 0, 1),
        insn(BPF_JMP | BPF_JNE | BPF_K, 1, 0, -3, 0),
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
        insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    static char log[65536];
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    attr.insn_cnt = sizeof(prog) / sizeof(prog[0]);
    attr.insns = (unsigned long)prog;
    attr.license = (unsigned long)"GPL";
    strcpy(attr.prog_name, "upcmp_spin");
    int pfd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
    if (pfd < 0) {
        /* Again with the verifier's log, to say why. */
        attr.log_buf = (unsigned long)log;
        attr.log_size = sizeof(log);
        attr.log_level = 1;
        syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
        perror("bpf(BPF_PROG_LOAD)");
        fprintf(stderr, "%s\n", log);
        return 1;
    }
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&a, sizeof(a)) || getsockname(rx, (struct sockaddr *)&a, &len) ||
        setsockopt(rx, SOL_SOCKET, SO_ATTACH_BPF, &pfd, sizeof(pfd))) {
        perror("socket");
        return 1;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long n = 0;
    for (;;) {
        for (int i = 0; i < 64; i++)
            sendto(tx, "upcmp", 5, 0, (struct sockaddr *)&a, sizeof(a));
        n += 64;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 >= seconds)
            break;
    }
    close(rx);
    close(tx);
    close(pfd);
    usleep(500000);
    printf("%lu packets\n", n);
    return 0;
}
