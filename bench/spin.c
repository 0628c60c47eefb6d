/*
 * spin: the pegged loop of the emulated NAS's cost bench (bench/nas_vm.py). It stands for the
 * transfer that keeps one core of a weak NAS busy: whatever another program costs that core
 * is taken from this loop's rate.
 *
 *   spin            count loop iterations until killed; on SIGUSR1 print one line
 *                   "mark COUNT NS" (iterations so far, CLOCK_MONOTONIC in ns) to stdout
 *
 * The loop body is a fixed few instructions; the count is a 64-bit integer in a register most
 * of the time and stored to memory every 4096 iterations, where the signal handler reads it.
 * Under qemu's -icount, CLOCK_MONOTONIC advances by instructions, so the rate between two marks
 * is exact and does not depend on the host's load.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t published;

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static void on_usr1(int sig)
{
    (void)sig;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char line[80], *p = line;
    memcpy(p, "mark ", 5);
    p = put_u64(p + 5, published);
    *p++ = ' ';
    p = put_u64(p, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    *p++ = '\n';
    ssize_t w = write(1, line, (size_t)(p - line));
    (void)w;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, 0);
    uint64_t n = 0;
    for (;;) {
        for (int i = 0; i < 4096; i++) {
            __asm__ volatile("" : "+r"(n));
            n++;
        }
        published = n;
    }
}
