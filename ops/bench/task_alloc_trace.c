// LD_PRELOAD library for ops/bench/task-slabs.sh: logs every swift_task_alloc / swift_task_dealloc(_through) of the
// process to /tmp/task-alloc.<pid> (or $TASK_ALLOC_TRACE_DIR/task-alloc.<pid>): the current task, the size, the
// caller (library + offset) and the address. Only calls made through the PLT are seen (every async frame of the
// program's own functions; not the concurrency runtime's internal allocations). A measuring tool: it serialises the
// process's task allocations on one mutex.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *(*real_alloc)(size_t);
static void (*real_dealloc)(void *);
static void (*real_dealloc_through)(void *);
static void *(*current_task)(void);
static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void set_up(void) {
    if (out) return;
    real_alloc = dlsym(RTLD_NEXT, "swift_task_alloc");
    real_dealloc = dlsym(RTLD_NEXT, "swift_task_dealloc");
    real_dealloc_through = dlsym(RTLD_NEXT, "swift_task_dealloc_through");
    current_task = dlsym(RTLD_NEXT, "swift_task_getCurrent");
    const char *dir = getenv("TASK_ALLOC_TRACE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/task-alloc.%d", dir ? dir : "/tmp", getpid());
    out = fopen(path, "w");
}

void *swift_task_alloc(size_t size) {
    pthread_mutex_lock(&lock);
    set_up();
    void *memory = real_alloc(size);
    void *caller = __builtin_return_address(0);
    Dl_info info = {0};
    dladdr(caller, &info);
    const char *file = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
    fprintf(out, "A %p %zu %s+0x%lx %p\n", current_task(), size, file ? file + 1 : "?",
            (unsigned long)((char *)caller - (char *)info.dli_fbase), memory);
    pthread_mutex_unlock(&lock);
    return memory;
}

// Logs a free of `memory` as `op` (D: one allocation, T: it and every later one of the task), then makes it.
static void logged_free(char op, void *memory) {
    pthread_mutex_lock(&lock);
    set_up();
    fprintf(out, "%c %p %p\n", op, current_task(), memory);
    (op == 'D' ? real_dealloc : real_dealloc_through)(memory);
    pthread_mutex_unlock(&lock);
}

void swift_task_dealloc(void *memory) {
    logged_free('D', memory);
}

void swift_task_dealloc_through(void *memory) {
    logged_free('T', memory);
}
