/* Preloaded (LD_PRELOAD) into the GPU check's processes: on a crash (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, and SIGABRT: llama.cpp's GGML_ASSERT aborts) it prints the C stack to stderr, then the
 * signal goes on (Python's faulthandler, where on, has printed the Python stack first). The
 * device has no gdb; crash.py names the frames with addr2line. Built on the device by
 * crash.build_shim (cc, one file, libc only). */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_fault(int sig, siginfo_t *info, void *uc) {
    (void)info; (void)uc;
    void *frames[64];
    int n = backtrace(frames, 64);
    static const char head[] = "\n[C stack]\n";
    write(2, head, sizeof head - 1);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    /* the first backtrace() loads libgcc_s, which allocates: done here, not in a handler that may
     * run inside malloc (a crash there would hang instead) */
    void *warm[2];
    backtrace(warm, 2);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL); /* GGML_ASSERT aborts */
}
