/* ssh.exe and scp.exe for tests/e2e/windows_wine.sh, standing in for Windows' own OpenSSH
 * client (C:\Windows\System32\OpenSSH): each runs this machine's OpenSSH program (UNIX_PROGRAM:
 * /usr/bin/ssh, or /usr/bin/scp when built with -DUNIX_PROGRAM='"/usr/bin/scp"') with its own
 * arguments, a Windows path among them (scp's local file, Z:\tmp\...) turned into the Unix path
 * wine maps it to; relays its Windows stdin, stdout and stderr to and from it; and exits with
 * its exit status (255 when it died by a signal, as ssh reports its own failures).
 *
 * Wine 8 starts a Unix program from CreateProcess, but gives back no process handle (Rust's
 * wait fails: "Invalid handle. (os error 6)") and does not hand it the pipes Rust's std makes
 * (wine's named pipes have no Unix file descriptor). So this program does it itself: wine runs
 * it as a Linux process, and raw Linux system calls (pipe2, fork, dup2, execve, read, write,
 * wait4) give it Unix pipes to a forked native program; three threads copy between those and
 * the Windows handles. x86_64 Linux only; the test builds it with mingw-w64 (-municode). */
#include <windows.h>

#ifndef UNIX_PROGRAM
#define UNIX_PROGRAM "/usr/bin/ssh"
#endif

enum { SYS_read = 0, SYS_write = 1, SYS_open = 2, SYS_close = 3, SYS_dup2 = 33, SYS_fork = 57,
       SYS_execve = 59, SYS_exit = 60, SYS_wait4 = 61, SYS_pipe2 = 293 };
#define O_CLOEXEC 02000000
/* A Linux register: 64 bits (a Windows long has 32). */
typedef long long reg;

static reg sys3(reg n, reg a, reg b, reg c)
{
    reg r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return r;
}

static reg sys4(reg n, reg a, reg b, reg c, reg d)
{
    reg r;
    register reg r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return r;
}

#define EINTR 4

struct relay {
    HANDLE win; /* the Windows side */
    int fd;     /* the Unix side */
};

/* Windows stdin -> the child's stdin; closes the pipe at EOF. */
static DWORD WINAPI to_child(LPVOID p)
{
    struct relay *r = p;
    static char buf[65536];
    DWORD n;
    while (ReadFile(r->win, buf, sizeof buf, &n, NULL) && n > 0) {
        DWORD off = 0;
        while (off < n) {
            reg w = sys3(SYS_write, r->fd, (reg)(buf + off), n - off);
            if (w == -EINTR)
                continue;
            if (w <= 0)
                goto done; /* the child stopped reading */
            off += (DWORD)w;
        }
    }
done:
    sys3(SYS_close, r->fd, 0, 0);
    return 0;
}

/* The child's stdout or stderr -> the Windows handle, until EOF. */
static DWORD WINAPI from_child(LPVOID p)
{
    struct relay *r = p;
    char *buf = HeapAlloc(GetProcessHeap(), 0, 65536);
    for (;;) {
        reg n = sys3(SYS_read, r->fd, (reg)buf, 65536);
        if (n == -EINTR)
            continue;
        if (n <= 0)
            break;
        DWORD off = 0, w;
        while (off < (DWORD)n && WriteFile(r->win, buf + off, (DWORD)n - off, &w, NULL))
            off += w;
    }
    sys3(SYS_close, r->fd, 0, 0);
    return 0;
}

static char *utf8(const wchar_t *w)
{
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
    char *s = HeapAlloc(GetProcessHeap(), 0, n);
    WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL);
    return s;
}

/* This process's Unix environment (/proc/self/environ), for the child. */
static char **unix_environ(void)
{
    static char buf[1 << 17];
    static char *env[2048];
    reg fd = sys3(SYS_open, (reg)"/proc/self/environ", O_CLOEXEC, 0), len = 0, n, i, k = 0;
    if (fd >= 0) {
        while (len < (reg)sizeof buf - 1 &&
               (n = sys3(SYS_read, fd, (reg)(buf + len), sizeof buf - 1 - len)) > 0)
            len += n;
        sys3(SYS_close, fd, 0, 0);
    }
    for (i = 0; i < len && k < 2047; i += lstrlenA(buf + i) + 1)
        if (buf[i])
            env[k++] = buf + i;
    env[k] = NULL;
    return env;
}

/* An argument that is a Windows path (C:\...) as the Unix path wine maps it to, for scp's local
 * file; anything else as it is. */
static char *unix_arg(const wchar_t *w)
{
    static char *(CDECL *to_unix)(const wchar_t *);
    if (!to_unix)
        to_unix = (void *)GetProcAddress(GetModuleHandleA("kernel32"), "wine_get_unix_file_name");
    if (to_unix && w[0] && w[1] == L':' && w[2] == L'\\') {
        char *u = to_unix(w);
        if (u)
            return u;
    }
    return utf8(w);
}

int wmain(int argc, wchar_t **wargv)
{
    char **argv = HeapAlloc(GetProcessHeap(), 0, sizeof(char *) * (argc + 1));
    char **envp = unix_environ();
    int in[2], out[2], err[2], i;
    argv[0] = UNIX_PROGRAM;
    for (i = 1; i < argc; i++)
        argv[i] = unix_arg(wargv[i]);
    argv[argc] = NULL;
    if (sys3(SYS_pipe2, (reg)in, O_CLOEXEC, 0) || sys3(SYS_pipe2, (reg)out, O_CLOEXEC, 0) ||
        sys3(SYS_pipe2, (reg)err, O_CLOEXEC, 0))
        return 255;
    reg pid = sys3(SYS_fork, 0, 0, 0);
    if (pid < 0)
        return 255;
    if (pid == 0) { /* the child: only system calls from here on */
        sys3(SYS_dup2, in[0], 0, 0);
        sys3(SYS_dup2, out[1], 1, 0);
        sys3(SYS_dup2, err[1], 2, 0);
        sys3(SYS_execve, (reg)UNIX_PROGRAM, (reg)argv, (reg)envp);
        sys3(SYS_write, err[1], (reg)"cannot run " UNIX_PROGRAM "\n", sizeof("cannot run " UNIX_PROGRAM "\n") - 1);
        sys3(SYS_exit, 255, 0, 0);
    }
    sys3(SYS_close, in[0], 0, 0);
    sys3(SYS_close, out[1], 0, 0);
    sys3(SYS_close, err[1], 0, 0);
    static struct relay rin, rout, rerr;
    rin.win = GetStdHandle(STD_INPUT_HANDLE);
    rin.fd = in[1];
    rout.win = GetStdHandle(STD_OUTPUT_HANDLE);
    rout.fd = out[0];
    rerr.win = GetStdHandle(STD_ERROR_HANDLE);
    rerr.fd = err[0];
    CloseHandle(CreateThread(NULL, 0, to_child, &rin, 0, NULL));
    HANDLE t[2] = {CreateThread(NULL, 0, from_child, &rout, 0, NULL),
                   CreateThread(NULL, 0, from_child, &rerr, 0, NULL)};
    WaitForMultipleObjects(2, t, TRUE, INFINITE);
    int status = 0;
    reg w;
    while ((w = sys4(SYS_wait4, pid, (reg)&status, 0, 0)) == -EINTR)
        ;
    if (w != pid)
        ExitProcess(255);
    /* exited: its status; killed by a signal: 255, as ssh reports its own failures */
    ExitProcess((status & 0x7f) == 0 ? (status >> 8) & 0xff : 255);
}
