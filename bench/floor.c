/*
 * floor: the C floor of nasprobe-agent's per-sample cost — the same reads the agent does per
 * sample, with the least work in user space (no real parsing, no encoding, no sending).
 *
 *   floor [--interval-ms MS] [--scan all|every:N] [--proc-root DIR] [--top N] [--count N]
 *         [--files-only]
 *
 * --files-only: the physical floor of any sampler, the 7 system files below pread once per
 * sample on kept descriptors and nothing else (no sysfs, no /proc/PID, no top N).
 *
 * Per sample, like agent/src/sampler (kept descriptors + pread where the agent keeps them):
 *   - pread on kept descriptors: stat, diskstats, net/dev, meminfo, vmstat, net/snmp,
 *     net/netstat, /proc/self/statm; getrusage; clock_gettime (MONOTONIC, BOOTTIME);
 *   - every 10th sample: sysfs operstate/carrier/speed/duplex/mtu of every NIC in net/dev
 *     (open/read/close, as the agent's link refresh);
 *   - full scan (every sample with --scan all, every Nth with every:N): lseek + getdents64 of
 *     /proc, /proc/PID/stat of every pid (first 256 on kept descriptors, the rest
 *     open/read/close); in between only the pids that used CPU at their last read;
 *   - the top N pids by CPU (N=8): /proc/PID/schedstat (open/read/close); the top 3 with more
 *     than one thread: /proc/PID/task listing + every task/TID/stat (open/read/close);
 *   - a pid first seen after the first sample: its cmdline, once (the agent's start event).
 * The only "parsing" is finding utime, stime and num_threads after the last ')' (needed to
 * choose the same pids the agent reads). Runs until SIGTERM/SIGINT or --count samples, then
 * prints its own CPU per sample (thread CPU clock: median, p95) to stderr.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAXP 16384
#define KEPT 256
#define BUF (64 * 1024)

struct proc {
    uint32_t pid;
    int fd;
    uint64_t ticks;
    uint32_t delta;
    uint32_t threads;
    int active;
    int seen;
};

static struct proc tab[MAXP], nxt[MAXP];
static int ntab;
static uint32_t pids[MAXP];
static char buf[BUF];
static char dents[8192];
static volatile sig_atomic_t stop;
static int kept;

static void on_sig(int s) { (void)s; stop = 1; }

static uint64_t ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static ssize_t pread0(int fd) { return pread(fd, buf, BUF, 0); }

static ssize_t read_rel(int dir, const char *rel) {
    int fd = openat(dir, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return -1;
    ssize_t n = pread0(fd);
    close(fd);
    return n;
}

/* utime+stime and num_threads of a /proc/PID/stat content. */
static int stat_fields(ssize_t n, uint64_t *ticks, uint32_t *threads) {
    if (n <= 0) return -1;
    char *e = memrchr(buf, ')', (size_t)n);
    if (!e) return -1;
    char *p = e + 2, *end = buf + n;
    uint64_t f[21] = {0};
    for (int i = 3; i <= 20 && p < end; i++) {
        uint64_t v = 0;
        while (p < end && *p != ' ') {
            if (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p - '0');
            p++;
        }
        f[i] = v;
        p++;
    }
    *ticks = f[14] + f[15];
    *threads = (uint32_t)f[20];
    return 0;
}

/* Numeric entries of a directory descriptor, sorted ascending by the kernel for /proc. */
static int list_numeric(int dir, uint32_t *out, int cap) {
    int k = 0;
    lseek(dir, 0, SEEK_SET);
    for (;;) {
        long n = syscall(SYS_getdents64, dir, dents, sizeof dents);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            unsigned short reclen = *(unsigned short *)(dents + off + 16);
            const char *name = dents + off + 19;
            if (name[0] >= '0' && name[0] <= '9' && k < cap) out[k++] = (uint32_t)strtoul(name, 0, 10);
            off += reclen;
        }
    }
    return k;
}

static int read_pid(int root, struct proc *p) {
    ssize_t n;
    if (p->fd >= 0) {
        n = pread0(p->fd);
        if (n <= 0) { close(p->fd); p->fd = -1; kept--; return -1; }
    } else {
        char rel[32];
        snprintf(rel, sizeof rel, "%u/stat", p->pid);
        int fd = openat(root, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) return -1;
        n = pread0(fd);
        if (kept < KEPT && n > 0) { p->fd = fd; kept++; } else close(fd);
    }
    uint64_t t; uint32_t th;
    if (stat_fields(n, &t, &th)) return -1;
    p->delta = p->seen ? (uint32_t)(t - p->ticks) : 0;
    p->active = p->delta > 0;
    p->ticks = t;
    p->threads = th;
    p->seen = 1;
    return 0;
}

static void full_scan(int root, int first) {
    int n = list_numeric(root, pids, MAXP), i = 0, j = 0, w = 0;
    while (i < ntab || j < n) {
        uint32_t o = i < ntab ? tab[i].pid : UINT32_MAX, s = j < n ? pids[j] : UINT32_MAX;
        if (o < s) { if (tab[i].fd >= 0) { close(tab[i].fd); kept--; } i++; continue; }
        struct proc p;
        if (o == s) { p = tab[i++]; j++; }
        else {
            memset(&p, 0, sizeof p); p.pid = s; p.fd = -1; j++;
            if (!first) { /* a new process: its command line is read once (start event) */
                char rel[32];
                snprintf(rel, sizeof rel, "%u/cmdline", s);
                read_rel(root, rel);
            }
        }
        if (read_pid(root, &p) == 0) nxt[w++] = p;
        else if (p.fd >= 0) { close(p.fd); kept--; }
    }
    memcpy(tab, nxt, (size_t)w * sizeof *tab);
    ntab = w;
}

static void partial_scan(int root) {
    for (int i = 0; i < ntab; i++)
        if (tab[i].active) read_pid(root, &tab[i]);
        else tab[i].delta = 0;
}

int main(int argc, char **argv) {
    long interval_ms = 1000, count = -1, every = 1, topn = 8;
    int files_only = 0;
    const char *root_path = "/proc", *sys_path = "/sys";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--interval-ms") && i + 1 < argc) interval_ms = atol(argv[++i]);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = atol(argv[++i]);
        else if (!strcmp(argv[i], "--top") && i + 1 < argc) topn = atol(argv[++i]);
        else if (!strcmp(argv[i], "--proc-root") && i + 1 < argc) root_path = argv[++i];
        else if (!strcmp(argv[i], "--sys-root") && i + 1 < argc) sys_path = argv[++i];
        else if (!strcmp(argv[i], "--files-only")) files_only = 1;
        else if (!strcmp(argv[i], "--scan") && i + 1 < argc) {
            const char *v = argv[++i];
            every = !strcmp(v, "all") ? 1 : (!strncmp(v, "every:", 6) ? atol(v + 6) : 1);
            if (every < 1) every = 1;
        } else {
            fprintf(stderr, "usage: floor [--interval-ms MS] [--scan all|every:N] [--top N] [--count N] [--proc-root DIR] [--sys-root DIR] [--files-only]\n");
            return 2;
        }
    }
    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    static const char *files[] = {"stat", "diskstats", "net/dev", "meminfo", "vmstat", "net/snmp", "net/netstat"};
    int root = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int sys = open(sys_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) { perror(root_path); return 1; }
    int fixed[8], nfixed = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        int fd = openat(root, files[i], O_RDONLY | O_CLOEXEC);
        if (fd >= 0) fixed[nfixed++] = fd;
    }
    int statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    /* NIC names from net/dev (setup, like the agent's discovery). */
    char nics[32][32];
    int nnic = 0;
    {
        int fd = openat(root, "net/dev", O_RDONLY);
        ssize_t n = fd >= 0 ? pread0(fd) : 0;
        if (fd >= 0) close(fd);
        buf[n > 0 ? n : 0] = 0;
        char *line = strtok(buf, "\n");
        for (int l = 0; line; line = strtok(0, "\n"), l++) {
            if (l < 2) continue;
            char *c = strchr(line, ':');
            if (!c) continue;
            *c = 0;
            while (*line == ' ') line++;
            if (strcmp(line, "lo") && nnic < 32) snprintf(nics[nnic++], 32, "%s", line);
        }
    }
    static uint64_t per[1 << 16];
    long nper = 0, sample = 0;
    uint64_t next = ns(CLOCK_MONOTONIC);
    while (!stop && (count < 0 || sample < count)) {
        next += (uint64_t)interval_ms * 1000000ull;
        uint64_t now = ns(CLOCK_MONOTONIC);
        if (next > now) {
            struct timespec d = {(time_t)((next - now) / 1000000000ull), (long)((next - now) % 1000000000ull)};
            nanosleep(&d, 0);
            if (stop) break;
        }
        uint64_t t0 = ns(CLOCK_THREAD_CPUTIME_ID);
        sample++;
        (void)ns(CLOCK_MONOTONIC);
        (void)ns(CLOCK_BOOTTIME);
        for (int i = 0; i < nfixed; i++) pread0(fixed[i]);
        if (files_only) {
            if (nper < (long)(sizeof per / sizeof *per)) per[nper++] = ns(CLOCK_THREAD_CPUTIME_ID) - t0;
            continue;
        }
        if (sample % 10 == 1 && sys >= 0) {
            static const char *attr[] = {"operstate", "carrier", "speed", "duplex", "mtu"};
            char rel[128];
            for (int k = 0; k < nnic; k++)
                for (int a = 0; a < 5; a++) {
                    snprintf(rel, sizeof rel, "class/net/%.31s/%s", nics[k], attr[a]);
                    read_rel(sys, rel);
                }
        }
        if (every == 1 || sample % every == 1 || sample <= 2) full_scan(root, sample == 1);
        else partial_scan(root);
        /* Top N by delta (insertion into a short list). */
        int top[16], nt = 0;
        for (int i = 0; i < ntab; i++) {
            if (!tab[i].delta) continue;
            int pos = nt;
            while (pos > 0 && tab[top[pos - 1]].delta < tab[i].delta) pos--;
            if (pos >= topn) continue;
            if (nt < topn) nt++;
            memmove(top + pos + 1, top + pos, (size_t)(nt - 1 - pos) * sizeof *top);
            top[pos] = i;
        }
        for (int k = 0; k < nt; k++) {
            char rel[48];
            snprintf(rel, sizeof rel, "%u/schedstat", tab[top[k]].pid);
            read_rel(root, rel);
            if (k < 3 && tab[top[k]].threads > 1) {
                snprintf(rel, sizeof rel, "%u/task", tab[top[k]].pid);
                int d = openat(root, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (d < 0) continue;
                static uint32_t tids[1024];
                int n = list_numeric(d, tids, 1024);
                for (int t = 0; t < n; t++) {
                    snprintf(rel, sizeof rel, "%u/stat", tids[t]);
                    read_rel(d, rel);
                }
                close(d);
            }
        }
        if (statm >= 0) pread(statm, buf, 128, 0);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        if (nper < (long)(sizeof per / sizeof *per)) per[nper++] = ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    }
    if (nper > 0) {
        for (long i = 1; i < nper; i++) { /* insertion sort: small n */
            uint64_t v = per[i]; long j = i - 1;
            while (j >= 0 && per[j] > v) { per[j + 1] = per[j]; j--; }
            per[j + 1] = v;
        }
        fprintf(stderr, "floor: samples=%ld processes=%d median_us=%.1f p95_us=%.1f\n", nper, ntab,
                per[nper / 2] / 1000.0, per[nper * 95 / 100] / 1000.0);
    }
    return 0;
}
