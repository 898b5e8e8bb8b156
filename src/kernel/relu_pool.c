/*
 * relu_pool.c - work splitting and the thread pool (see relu_pool.h).
 *
 * A persistent pool of POSIX threads, created on the first large call, works on a call together
 * with the calling thread. The call is cut into up to 8 parts per thread that the threads claim
 * one at a time, so a thread that runs late (its core busy with another process) delays the call
 * by at most one part. Small calls never touch the pool. One call uses the pool at a time: a
 * caller that finds it busy (several threads calling at once) computes on its own thread, so
 * nothing ever waits for the pool and nothing can deadlock. A forked child forgets the parent's
 * pool (its threads do not exist there) and makes a new one when it needs it. Workers are
 * detached and sleep on a condition variable, so process exit (and interpreter exit) never waits
 * for them.
 */
/* POSIX.1-2008 for clock_gettime, pthread_sigmask and sigset_t under -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include "relu_pool.h"

#include <stdint.h>
#include <stdlib.h>

#include "relu_tuning.h"

#if RELU_HAVE_THREADS
#include <pthread.h>
#include <signal.h>

#include "relu_glibc_compat.h" /* pthread functions bound to their oldest glibc versions */
#include <time.h> /* clock_gettime, for the spin limit */

/* The pause hint for spin loops. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RELU_CPU_RELAX() _mm_pause()
#elif (defined(__aarch64__) || defined(__arm__)) && (defined(__GNUC__) || defined(__clang__))
#define RELU_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define RELU_CPU_RELAX() ((void)0)
#endif
#endif /* RELU_HAVE_THREADS */

/* Parts per thread: a thread slowed down (a core shared with another process) hands its
 * remaining parts to the others instead of holding up the call. */
enum { RELU_PARTS_PER_THREAD = 8 };

void
relu_split(ptrdiff_t n, ptrdiff_t bytes, int *threads, int *parts)
{
    relu_split_for(n, bytes, RELU_LOAD(relu_tuning.num_threads), threads, parts);
}

void
relu_split_for(ptrdiff_t n, ptrdiff_t bytes, int available, int *threads, int *parts)
{
    *threads = available;
    *parts = 1;
    if (*threads <= 1 || bytes < RELU_LOAD(relu_tuning.parallel_bytes)) {
        *threads = 1;
        return;
    }
    const ptrdiff_t min_part = RELU_LOAD(relu_tuning.min_part_bytes);
    ptrdiff_t count = (ptrdiff_t)*threads * RELU_PARTS_PER_THREAD;
    if (min_part > 0 && bytes / min_part < count) {
        count = bytes / min_part;
    }
    if (count > n) {
        count = n;
    }
    *parts = count < 1 ? 1 : (int)count;
    if (*parts < *threads) {
        *threads = *parts;
    }
}

/*
 * Start of part k of `parts` nearly equal parts of [0, n). When the output is contiguous, the
 * boundary is moved down to a 64-byte line of the output, so that no cache line is written by
 * two threads and every streaming range starts on a whole line.
 */
static ptrdiff_t
relu_part_start(const relu_call *call, int k)
{
    if (k <= 0) {
        return 0;
    }
    if (k >= call->parts) {
        return call->n;
    }
    const ptrdiff_t n = call->n, parts = call->parts, elsize = call->elsize;
    ptrdiff_t b = (n / parts) * k + ((n % parts) * k) / parts;
    if (call->out_stride == elsize && ((uintptr_t)call->out % (uintptr_t)elsize) == 0) {
        const uintptr_t addr = (uintptr_t)call->out + (uintptr_t)(b * elsize);
        b -= (ptrdiff_t)((addr & 63) / (uintptr_t)elsize);
    }
    return b < 0 ? 0 : b;
}

/* Computes part k of the call (on whichever thread claimed it). */
void
relu_call_run_part(const relu_call *call, int k)
{
    call->run(call->task, relu_part_start(call, k), relu_part_start(call, k + 1));
}

#if RELU_HAVE_THREADS

typedef struct relu_pool relu_pool;

typedef struct {
    relu_pool *pool;
    int id;                          /* 0, 1, ...: takes part in a call when id < active */
    unsigned long start_generation;  /* the pool's generation when this worker was started */
} relu_worker;

/*
 * A call is posted by bumping `generation` (under `lock`); every thread then claims parts one at
 * a time from `claim`, whose high 32 bits carry the call's generation and low 32 bits the next
 * part: a worker that wakes up after its call has ended cannot claim a part of the next one.
 * `done` counts finished parts; the caller waits for it to reach the call's parts.
 *
 * Waking a sleeping thread costs tens of microseconds in a virtual machine (~25 us measured in a
 * KVM guest: the idle vCPU has to be scheduled again), as much as 1 MiB of work. So a worker
 * that finishes a call, and the caller waiting for the last part, first spin (with a pause
 * instruction) for up to the tuning's spin_ns before sleeping on the condition variables:
 * back-to-back large calls then start at once, at the price of at most spin_ns of CPU per thread
 * after each large call (onnxruntime and OpenMP workers spin for milliseconds).
 */
struct relu_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;             /* a new call: generation changed */
    pthread_cond_t finished;         /* done reached the call's parts */
    atomic_ulong generation;         /* incremented (under lock) for every call */
    atomic_int nworkers;             /* started so far; only grows (written by the flag's holder,
                                        read without it by relu_pool_workers) */
    int active;                      /* workers 0 .. active-1 take part in the current call */
    relu_call call;
    _Atomic(uint64_t) claim;
    atomic_int done;
    relu_worker workers[RELU_MAX_THREADS];
};

/*
 * The pool and the flag that gives one caller at a time the right to use (and create or grow)
 * it. A caller that cannot take the flag runs its call serially: no waiting, no deadlock.
 *
 * Memory ordering (written for weak-memory CPUs such as arm64, where it cannot be tested here;
 * x86-64 orders more than C11 promises). Every hand-off is a release paired with an acquire, or
 * a mutex, which is both:
 *  - caller to caller: taking relu_pool_busy is an acquire CAS and giving it back a release
 *    store, so the pool a previous holder created or grew (relu_pool_instance, every worker's
 *    record, the mutex and condition variables) is complete for the next holder.
 *  - caller to workers: the call (pool->call, active) is written under pool->lock and the
 *    generation is bumped, with a release store, under the same lock; a worker reads the call
 *    under the lock after seeing the new generation (under the lock, or by an acquire load while
 *    spinning and then taking the lock), so it reads this call's fields, and the caller's writes
 *    to the input before the call (in program order before the lock) are visible to it. The
 *    claim word is stored (release) before the generation, so a worker that sees the new
 *    generation also sees the claim word tagged with it.
 *  - claims: a part is handed out by an acq_rel CAS on `claim`, so each part goes to exactly
 *    one thread, and a worker that woke late for an old generation finds the tag changed.
 *  - workers to caller: each worker finishes its part's stores and then counts it with an
 *    acq_rel fetch_add on `done`; the caller waits for `done` to reach the parts with acquire
 *    loads (spinning) or under the lock (after the worker's signal under the same lock), so
 *    every store to the output happens before the caller returns it to Python. Streaming stores
 *    are weakly ordered even on x86-64: the kernel ends each part's streaming loop with a store
 *    fence (relu_kernel.c) before the part is counted.
 *  - relu_pool_workers (a report) reads the instance with an acquire load and the count
 *    relaxed, without the flag: it may see a count that is just out of date, never a torn one.
 */
static _Atomic(relu_pool *) relu_pool_instance = NULL; /* written only by the flag's holder */
static atomic_int relu_pool_busy = 0;

/* Run parts of the call of `generation` until none is left; returns when there is nothing to claim. */
static void
relu_work(relu_pool *pool, const relu_call *call, unsigned long generation)
{
    const uint64_t tag = (uint64_t)(uint32_t)generation << 32;
    uint64_t current = atomic_load_explicit(&pool->claim, memory_order_acquire);
    for (;;) {
        if ((current & ~(uint64_t)UINT32_MAX) != tag || (uint32_t)current >= (uint32_t)call->parts) {
            return;
        }
        if (!atomic_compare_exchange_weak_explicit(&pool->claim, &current, current + 1,
                                                   memory_order_acq_rel, memory_order_acquire)) {
            continue; /* `current` was reloaded */
        }
        relu_call_run_part(call, (int)(uint32_t)current);
        if (atomic_fetch_add_explicit(&pool->done, 1, memory_order_acq_rel) + 1 == call->parts) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->finished);
            pthread_mutex_unlock(&pool->lock);
        }
        current = atomic_load_explicit(&pool->claim, memory_order_acquire);
    }
}

/* Spin until *word != value or (done-counter form) *count >= target, for at most `ns`
 * nanoseconds; returns whether the condition came true. */
static double
relu_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
}

static int
relu_spin_while_equal(atomic_ulong *word, unsigned long value, ptrdiff_t ns)
{
    if (ns <= 0) {
        return 0;
    }
    const double deadline = relu_now_ns() + (double)ns;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(word, memory_order_acquire) != value) {
                return 1;
            }
            RELU_CPU_RELAX();
        }
        if (relu_now_ns() > deadline) {
            return 0;
        }
    }
}

static int
relu_spin_until_reached(atomic_int *count, int target, ptrdiff_t ns)
{
    const double deadline = ns > 0 ? relu_now_ns() + (double)ns : 0;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(count, memory_order_acquire) >= target) {
                return 1;
            }
            RELU_CPU_RELAX();
        }
        if (ns <= 0 || relu_now_ns() > deadline) {
            return 0;
        }
    }
}

static void *
relu_worker_main(void *arg)
{
    relu_worker *self = (relu_worker *)arg;
    relu_pool *pool = self->pool;
    unsigned long seen = self->start_generation;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        if (atomic_load_explicit(&pool->generation, memory_order_relaxed) == seen) {
            pthread_mutex_unlock(&pool->lock);
            relu_spin_while_equal(&pool->generation, seen, RELU_LOAD(relu_tuning.spin_ns));
            pthread_mutex_lock(&pool->lock);
            while (atomic_load_explicit(&pool->generation, memory_order_relaxed) == seen) {
                pthread_cond_wait(&pool->wake, &pool->lock);
            }
        }
        seen = atomic_load_explicit(&pool->generation, memory_order_relaxed);
        if (self->id < pool->active) {
            const relu_call call = pool->call;
            pthread_mutex_unlock(&pool->lock);
            relu_work(pool, &call, seen);
            pthread_mutex_lock(&pool->lock);
        }
    }
    return NULL; /* not reached: workers live as long as the process */
}

/* Called by the holder of relu_pool_busy: the pool with at least `workers` workers if possible. */
static relu_pool *
relu_pool_get(int workers)
{
    relu_pool *pool = atomic_load_explicit(&relu_pool_instance, memory_order_relaxed);
    if (pool == NULL) {
        pool = (relu_pool *)calloc(1, sizeof(relu_pool));
        if (pool == NULL) {
            return NULL;
        }
        if (pthread_mutex_init(&pool->lock, NULL) != 0) {
            free(pool);
            return NULL;
        }
        if (pthread_cond_init(&pool->wake, NULL) != 0) {
            pthread_mutex_destroy(&pool->lock);
            free(pool);
            return NULL;
        }
        if (pthread_cond_init(&pool->finished, NULL) != 0) {
            pthread_cond_destroy(&pool->wake);
            pthread_mutex_destroy(&pool->lock);
            free(pool);
            return NULL;
        }
        atomic_init(&pool->claim, 0);
        atomic_init(&pool->generation, 0);
        atomic_init(&pool->done, 0);
        atomic_init(&pool->nworkers, 0);
        atomic_store_explicit(&relu_pool_instance, pool, memory_order_release);
    }
    if (workers > RELU_MAX_THREADS - 1) {
        workers = RELU_MAX_THREADS - 1;
    }
    int started = atomic_load_explicit(&pool->nworkers, memory_order_relaxed);
    if (started >= workers) {
        return pool;
    }
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) {
        return pool;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Workers inherit the creating thread's signal mask: block everything so that signals keep
     * going to the caller's threads (the Python interpreter's). */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    while (started < workers) {
        relu_worker *worker = &pool->workers[started];
        worker->pool = pool;
        worker->id = started;
        worker->start_generation = atomic_load_explicit(&pool->generation, memory_order_relaxed);
        pthread_t thread;
        if (pthread_create(&thread, &attr, relu_worker_main, worker) != 0) {
            break; /* run with the workers there are */
        }
        atomic_store_explicit(&pool->nworkers, ++started, memory_order_relaxed);
    }
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attr);
    return pool;
}

int
relu_pool_run(const relu_call *call, int threads)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&relu_pool_busy, &expected, 1,
                                                 memory_order_acquire, memory_order_relaxed)) {
        return 0;
    }
    relu_pool *pool = relu_pool_get(threads - 1);
    const int started = pool == NULL ? 0 : atomic_load_explicit(&pool->nworkers, memory_order_relaxed);
    const int workers = started < threads - 1 ? started : threads - 1;
    if (workers < 1) {
        atomic_store_explicit(&relu_pool_busy, 0, memory_order_release);
        return 0;
    }
    pthread_mutex_lock(&pool->lock);
    const unsigned long generation =
        atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1;
    pool->call = *call;
    pool->active = workers;
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->claim, (uint64_t)(uint32_t)generation << 32, memory_order_release);
    atomic_store_explicit(&pool->generation, generation, memory_order_release); /* spinners go */
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    relu_work(pool, call, generation);

    if (!relu_spin_until_reached(&pool->done, call->parts, RELU_LOAD(relu_tuning.spin_ns))) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load_explicit(&pool->done, memory_order_acquire) < call->parts) {
            pthread_cond_wait(&pool->finished, &pool->lock);
        }
        pthread_mutex_unlock(&pool->lock);
    }
    atomic_store_explicit(&relu_pool_busy, 0, memory_order_release);
    return 1;
}

/*
 * In a child process made by fork() only the forking thread exists: forget the parent's pool
 * (its memory is left as it is; its mutex may be held by a thread that is gone) and release the
 * flag. The next large call makes a new pool.
 */
static void
relu_after_fork_in_child(void)
{
    atomic_store_explicit(&relu_pool_instance, NULL, memory_order_relaxed);
    atomic_store_explicit(&relu_pool_busy, 0, memory_order_relaxed);
}

/* Installed once per process whoever asks, and from however many threads. */
static pthread_once_t relu_fork_handler_once = PTHREAD_ONCE_INIT;
static int relu_fork_handler_result = -1;

static void
relu_install_fork_handler_once(void)
{
    relu_fork_handler_result = pthread_atfork(NULL, NULL, relu_after_fork_in_child) == 0 ? 0 : -1;
}

int
relu_pool_install_fork_handler(void)
{
    pthread_once(&relu_fork_handler_once, relu_install_fork_handler_once);
    return relu_fork_handler_result;
}

int
relu_pool_workers(void)
{
    /* Informational only: read without taking the flag. */
    relu_pool *pool = atomic_load_explicit(&relu_pool_instance, memory_order_acquire);
    return pool == NULL ? 0 : atomic_load_explicit(&pool->nworkers, memory_order_relaxed);
}
#else
int
relu_pool_run(const relu_call *call, int threads)
{
    (void)call;
    (void)threads;
    return 0;
}

int
relu_pool_install_fork_handler(void)
{
    return 0;
}

int
relu_pool_workers(void)
{
    return 0;
}
#endif /* RELU_HAVE_THREADS */
