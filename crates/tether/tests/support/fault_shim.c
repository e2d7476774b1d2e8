/*
 * The chaos harness's fault shim (tests/chaos.rs), loaded into the forwarders, the daemon
 * and the agents with LD_PRELOAD. It changes nothing until a test writes one of its control
 * files, so a fault can be switched on and off while the processes run:
 *
 * - $TETHER_CHAOS_SLOW_DISK names a file holding milliseconds: while it holds a number
 *   above zero, every fsync(2) and fdatasync(2) sleeps that long before doing its work
 *   (a slow disk: a saturated device, a network file system).
 * - $TETHER_CHAOS_CLOCK names a file holding seconds, signed: CLOCK_REALTIME (and
 *   gettimeofday) read that much ahead of the real time; the monotonic clocks are left
 *   alone, as a real step of the wall clock leaves them (NTP stepping a drifting clock, a
 *   user setting the time, a virtual machine restored from a snapshot).
 *
 * The files are read with open/read/close at each call (no stdio, no allocation): the
 * calls are rare enough, and the shim keeps no state.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long number_in(const char *variable) {
    const char *path = getenv(variable);
    if (path == NULL) {
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    return strtoll(buf, NULL, 10);
}

static void slow_disk(void) {
    long long ms = number_in("TETHER_CHAOS_SLOW_DISK");
    if (ms > 0) {
        struct timespec wait = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&wait, &wait) != 0) {
        }
    }
}

int fsync(int fd) {
    static int (*real)(int);
    if (real == NULL) {
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    }
    slow_disk();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (real == NULL) {
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    }
    slow_disk();
    return real(fd);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *);
    if (real == NULL) {
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    }
    int r = real(id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        ts->tv_sec += number_in("TETHER_CHAOS_CLOCK");
    }
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    int r = clock_gettime(CLOCK_REALTIME, &ts);
    if (r == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    (void)tz;
    return r;
}
