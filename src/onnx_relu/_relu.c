/*
 * _relu.c - the compiled core of onnx-relu: the ONNX Relu operator as a NumPy ufunc.
 *
 * Types (exactly the Relu-14 type set, one loop each, no casting):
 *   float16, float32, float64, bfloat16 (ml_dtypes), int8, int16, int32, int64.
 *
 * Semantics, identical for every float type:
 *   y = x      where x > 0 or x is a NaN (NaN bits returned unchanged: sign, payload, signalling bit);
 *   y = +0     for every other input (-0.0, -inf, negative numbers, negative subnormals).
 * Integers: y = x if x > 0 else 0.
 *
 * Every type is computed on its bit pattern read as a signed integer of the same width, so no
 * floating-point instruction runs (no FP exception flag can be raised, a signalling NaN is never
 * quieted) and one compare-and-select serves all eight types:
 *
 *     y = (s > threshold) ? s : 0
 *
 * For an IEEE binary format read as a signed integer, negative values (sign bit set) are the
 * integers below zero, ordered so that -inf is the smallest pattern above every negative finite
 * number and -0.0, and every negative NaN lies above -inf. Hence "s > bits(-inf)" holds exactly
 * for +0, positive numbers, +inf and NaNs of either sign; everything else becomes the pattern 0,
 * which is +0.0. For integers the threshold is 0.
 *
 * Speed. Relu is memory bound, so the work is to move bytes at the machine's limit:
 *  - Regular stores: plain C loops that compilers vectorise. On x86-64 with GCC or Clang each is
 *    compiled three times (baseline SSE2, x86-64-v3 = AVX2, x86-64-v4 = AVX-512) and the best one
 *    is picked when the module is loaded (target_clones); the build never uses -march=native.
 *    SSE2 has no 64-bit signed compare, which is why the int64/float64 loops need the clones.
 *  - Non-temporal (streaming) stores, out of place, for calls whose output is larger than the
 *    caches that give a core more bandwidth than memory (threshold chosen at import from the
 *    cache sizes, see relu_default_nt_bytes): the stores bypass the caches, so there is no
 *    read-for-ownership of the destination and no eviction of useful lines. In place the loops
 *    always use regular stores (the line was just loaded: nothing to save). x86-64 only, written
 *    with GCC vector extensions and the streaming-store intrinsics in functions compiled for
 *    SSE2, AVX2 or AVX-512 and chosen at run time with __builtin_cpu_supports. The destination
 *    is first brought to a 64-byte boundary with regular stores; an sfence ends every run of
 *    streaming stores. Elsewhere the regular loops serve.
 *  - Threads: a persistent pool of POSIX threads, created on the first large call, works on a
 *    large 1-D loop call (contiguous or strided) together with the calling thread. The call is
 *    cut into up to 8 chunks per thread that the threads claim one at a time, so a thread that
 *    runs late (its core busy with another process) delays the call by at most one chunk.
 *    Small calls never touch the pool. One call uses the pool at a time: a caller that finds it
 *    busy (several Python threads calling at once) computes on its own thread, so nothing ever
 *    waits for the pool and nothing can deadlock. A forked child forgets the parent's pool (its
 *    threads do not exist there) and makes a new one when it needs it. Workers are detached and
 *    sleep on a condition variable, so interpreter exit never waits for them.
 *
 * Tuning (thread count, thresholds, ISA of the streaming stores) is process-wide; the Python side
 * (onnx_relu._threads) sets the thread count, and private functions let the tests and the
 * benchmark harness move the thresholds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#include <numpy/dtype_api.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h> /* sysconf */
#endif

/* ------------------------------------------------------------------------------------------ */
/* Element helpers                                                                             */
/* ------------------------------------------------------------------------------------------ */

/*
 * Element types that may sit at any address and alias anything, so that the loop is correct for
 * any pointer numpy passes. The loops are registered for unaligned data too
 * (NPY_METH_SUPPORTS_UNALIGNED); numpy 2.4 still copies unaligned operands through aligned
 * buffers before calling them (seen in gdb, and unaligned calls run ~1.6x slower), so this buys
 * correctness whatever numpy does, not speed.
 */
#if defined(__GNUC__) || defined(__clang__)
#define RELU_ELEMENT_ATTRS __attribute__((aligned(1), may_alias))
#define RELU_SUPPORTS_UNALIGNED 1
#else
#define RELU_ELEMENT_ATTRS
#define RELU_SUPPORTS_UNALIGNED 0
#endif

typedef int8_t RELU_ELEMENT_ATTRS relu_i8;
typedef int16_t RELU_ELEMENT_ATTRS relu_i16;
typedef int32_t RELU_ELEMENT_ATTRS relu_i32;
typedef int64_t RELU_ELEMENT_ATTRS relu_i64;

/* Bit pattern of -inf read as a signed integer of the format's width. */
#define RELU_F16_NEG_INF ((int16_t)-1024)                      /* 0xFC00 */
#define RELU_BF16_NEG_INF ((int16_t)-128)                      /* 0xFF80 */
#define RELU_F32_NEG_INF ((int32_t)INT32_C(-8388608))          /* 0xFF800000 */
#define RELU_F64_NEG_INF ((int64_t)INT64_C(-4503599627370496)) /* 0xFFF0000000000000 */

/*
 * The eight types, listed once; every per-type definition and table below is generated from it.
 * X(name, element type for any address, plain integer type, bytes, threshold of the compare)
 */
#define RELU_FOR_EACH_TYPE(X)                                                                  \
    X(int8, relu_i8, int8_t, 1, 0)                                                             \
    X(int16, relu_i16, int16_t, 2, 0)                                                          \
    X(int32, relu_i32, int32_t, 4, 0)                                                          \
    X(int64, relu_i64, int64_t, 8, 0)                                                          \
    X(float16, relu_i16, int16_t, 2, RELU_F16_NEG_INF)                                         \
    X(bfloat16, relu_i16, int16_t, 2, RELU_BF16_NEG_INF)                                       \
    X(float32, relu_i32, int32_t, 4, RELU_F32_NEG_INF)                                         \
    X(float64, relu_i64, int64_t, 8, RELU_F64_NEG_INF)

/* Run-time dispatch between ISA levels, where the toolchain and the C library support it. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define RELU_DISPATCH __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#endif
#endif
#ifndef RELU_DISPATCH
#define RELU_DISPATCH
#endif

/* Streaming (non-temporal) stores: x86-64 with a compiler that has vector extensions.
 * (-DRELU_DISABLE_NT builds the portable loops only, to test them on x86-64.) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(RELU_DISABLE_NT)
#define RELU_HAVE_NT 1
#include <immintrin.h>
#else
#define RELU_HAVE_NT 0
#endif

/* The pause hint for spin loops. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RELU_CPU_RELAX() _mm_pause()
#elif (defined(__aarch64__) || defined(__arm__)) && (defined(__GNUC__) || defined(__clang__))
#define RELU_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define RELU_CPU_RELAX() ((void)0)
#endif

/* The thread pool needs POSIX threads and C11 atomics; without them every call is serial.
 * (-DRELU_DISABLE_THREADS builds the serial version, to test it.) */
#if (defined(__unix__) || defined(__APPLE__)) && !defined(__STDC_NO_ATOMICS__) &&              \
    !defined(RELU_DISABLE_THREADS)
#define RELU_HAVE_THREADS 1
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h> /* clock_gettime, for the spin limit */
#define RELU_ATOMIC(type) _Atomic(type)
#define RELU_LOAD(var) atomic_load_explicit(&(var), memory_order_relaxed)
#define RELU_STORE(var, value) atomic_store_explicit(&(var), (value), memory_order_relaxed)
#else
#define RELU_HAVE_THREADS 0
#define RELU_ATOMIC(type) type
#define RELU_LOAD(var) (var)
#define RELU_STORE(var, value) ((var) = (value))
#endif

/* Most threads one call may use (the calling thread included). */
enum { RELU_MAX_THREADS = 256 };

/* Streaming-store code paths, in order of preference; RELU_ISA_NONE means regular stores only. */
typedef enum { RELU_ISA_NONE = 0, RELU_ISA_SSE2, RELU_ISA_AVX2, RELU_ISA_AVX512, RELU_ISA_COUNT } relu_isa;
static const char *const relu_isa_names[RELU_ISA_COUNT] = {"none", "sse2", "avx2", "avx512"};

/* Default tuning; see relu_default_tuning() for the values derived from the cache size. */
#define RELU_DEFAULT_L2_BYTES ((Py_ssize_t)1 << 20)     /* when the cache sizes cannot be read */
#define RELU_DEFAULT_LLC_BYTES ((Py_ssize_t)32 << 20)
/* Threads pay from about 2 MiB outputs: waking a sleeping worker costs ~25 us in a KVM guest
 * (measured: 2 threads 0.6 x at 1 MiB, 1.03 x at 2 MiB, 1.4 x at 4 MiB; benchmarks/threshold_scan.py). */
#define RELU_DEFAULT_PARALLEL_BYTES ((Py_ssize_t)2 << 20)
#define RELU_DEFAULT_MIN_CHUNK_BYTES ((Py_ssize_t)256 << 10)
/* How long pool threads spin before sleeping (see struct relu_pool). */
#define RELU_DEFAULT_SPIN_NS ((Py_ssize_t)100000)

/* ------------------------------------------------------------------------------------------ */
/* Inner loops                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/*
 * relu_block_<name>(in, out, n, in_stride, out_stride): n elements, strides in bytes, regular
 * stores. The contiguous branch and the strided branch have the same body; the contiguous one is
 * written with indices so that the compiler vectorises it (in == out, in place, is allowed: each
 * element is read before it is written and numpy never passes partially overlapping operands to
 * a loop). relu_tail_<name> is the same contiguous loop for the few elements before and after a
 * run of streaming stores; it is inlined into the ISA-specific functions below.
 */
#define RELU_DEFINE_BLOCK(name, elem_t, threshold)                                             \
    static inline void relu_tail_##name(const char *in, char *out, npy_intp n)                \
    {                                                                                          \
        const elem_t *src = (const elem_t *)in;                                                \
        elem_t *dst = (elem_t *)out;                                                           \
        for (npy_intp i = 0; i < n; i++) {                                                     \
            const elem_t v = src[i];                                                           \
            dst[i] = (v > (threshold)) ? v : (elem_t)0;                                        \
        }                                                                                      \
    }                                                                                          \
    RELU_DISPATCH static void relu_block_##name(const char *in, char *out, npy_intp n,         \
                                                npy_intp in_stride, npy_intp out_stride)       \
    {                                                                                          \
        if (in_stride == (npy_intp)sizeof(elem_t) && out_stride == (npy_intp)sizeof(elem_t)) { \
            relu_tail_##name(in, out, n); /* inlined into each ISA clone, so vectorised */     \
        }                                                                                      \
        else {                                                                                 \
            for (npy_intp i = 0; i < n; i++) {                                                 \
                const elem_t v = *(const elem_t *)(in + i * in_stride);                        \
                *(elem_t *)(out + i * out_stride) = (v > (threshold)) ? v : (elem_t)0;         \
            }                                                                                  \
        }                                                                                      \
    }

#define RELU_BLOCK_OF(name, unaligned_t, int_t, size, threshold)                               \
    RELU_DEFINE_BLOCK(name, unaligned_t, threshold)
RELU_FOR_EACH_TYPE(RELU_BLOCK_OF)

/*
 * The copy used by the benchmark harness as its ceiling (_relu._copy): the same structure as a
 * Relu block without the compare, so that Relu and ceiling differ only in the arithmetic. It
 * moves whole 64-byte lines; the empty asm keeps the compiler from turning the loop into a
 * memcpy/memmove call, which may skip the work when in == out (the in-place ceiling).
 */
#if defined(__GNUC__) || defined(__clang__)
typedef int8_t relu_line __attribute__((vector_size(64), aligned(1), may_alias));
#define RELU_COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")
#else
typedef struct { int8_t bytes[64]; } relu_line;
#define RELU_COMPILER_BARRIER() ((void)0)
#endif

RELU_DISPATCH static void
relu_block_copy(const char *in, char *out, npy_intp n, npy_intp in_stride, npy_intp out_stride)
{
    npy_intp i = 0;
    if (in_stride == 1 && out_stride == 1) {
        for (; i + 64 <= n; i += 64) {
            relu_line line;
            memcpy(&line, in + i, 64);
            memcpy(out + i, &line, 64);
            RELU_COMPILER_BARRIER();
        }
    }
    for (; i < n; i++) {
        *(relu_i8 *)(out + i * out_stride) = *(const relu_i8 *)(in + i * in_stride);
    }
}
static inline void
relu_tail_copy(const char *in, char *out, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) {
        ((relu_i8 *)out)[i] = ((const relu_i8 *)in)[i];
    }
}

typedef void (*relu_block_fn)(const char *, char *, npy_intp, npy_intp, npy_intp);
/* Contiguous, out aligned to the element size; n elements; streaming stores. */
typedef void (*relu_nt_fn)(const char *, char *, npy_intp);

#if RELU_HAVE_NT
/*
 * relu_nt_<name>_<isa>(in, out, n): contiguous in and out, out aligned to the element size
 * (in may have any alignment); n elements; in == out is allowed. The caller issues the sfence.
 *
 * Regular stores up to the first 64-byte boundary of out; then blocks of RELU_NT_PAGES pages
 * with streaming stores, walking the pages of a block side by side (RELU_NT_STEP bytes of each
 * page in turn); then whole lines; then the last elements with regular stores. Four streams a
 * page apart keep more reads in flight than one sequential stream (glibc's memcpy does the same
 * for large copies). Measured on 512 MiB float32 arrays (KVM guest on a Xeon): 1 page 21.3 GB/s,
 * 2 pages 24.0, 4 pages 25.1, 8 pages 25.6 but 3 % slower at 64 MiB; a software prefetch of the
 * next step made 64 MiB relu 9 % slower and nothing faster.
 */
#ifndef RELU_NT_PAGES
#define RELU_NT_PAGES 4
#endif
#define RELU_NT_PAGE_BYTES 4096
#define RELU_NT_STEP 256

#define RELU_OP_RELU(v, limit) ((v > limit) & v)
#define RELU_OP_COPY(v, limit) ((void)(limit), v)

#define RELU_DEFINE_NT_ISA(fname, tail, int_t, threshold, op, isa_target, vbytes, vec_t, stream) \
    __attribute__((target(isa_target))) static void fname(const char *in, char *out, npy_intp n) \
    {                                                                                          \
        typedef int_t relu_vec __attribute__((vector_size(vbytes)));                           \
        const relu_vec limit = (relu_vec){0} + (int_t)(threshold);                             \
        const size_t elsize = sizeof(int_t), total = (size_t)n * elsize;                       \
        size_t pos = (size_t)((64 - ((uintptr_t)out & 63)) & 63);                              \
        if (pos > total) {                                                                     \
            pos = total;                                                                       \
        }                                                                                      \
        tail(in, out, (npy_intp)(pos / elsize));                                               \
        for (; pos + RELU_NT_PAGES * RELU_NT_PAGE_BYTES <= total;                              \
             pos += RELU_NT_PAGES * RELU_NT_PAGE_BYTES) {                                      \
            for (size_t step = 0; step < RELU_NT_PAGE_BYTES; step += RELU_NT_STEP) {           \
                for (int page = 0; page < RELU_NT_PAGES; page++) {                             \
                    const size_t at = pos + (size_t)page * RELU_NT_PAGE_BYTES + step;          \
                    for (int k = 0; k < RELU_NT_STEP / (vbytes); k++) {                        \
                        relu_vec v;                                                            \
                        memcpy(&v, in + at + k * (vbytes), (vbytes));                          \
                        v = (relu_vec)op(v, limit);                                            \
                        stream((vec_t *)(void *)(out + at + k * (vbytes)), (vec_t)v);          \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (; pos + 64 <= total; pos += 64) {                                                 \
            for (int k = 0; k < 64 / (vbytes); k++) {                                          \
                relu_vec v;                                                                    \
                memcpy(&v, in + pos + k * (vbytes), (vbytes));                                 \
                v = (relu_vec)op(v, limit);                                                    \
                stream((vec_t *)(void *)(out + pos + k * (vbytes)), (vec_t)v);                 \
            }                                                                                  \
        }                                                                                      \
        tail(in + pos, out + pos, (npy_intp)((total - pos) / elsize));                         \
    }

#define RELU_TARGET_SSE2 "sse2"
#define RELU_TARGET_AVX2 "avx2"
#define RELU_TARGET_AVX512 "avx512f,avx512bw"

#define RELU_DEFINE_NT_OP(name, tail, int_t, threshold, op)                                   \
    RELU_DEFINE_NT_ISA(relu_nt_##name##_sse2, tail, int_t, threshold, op, RELU_TARGET_SSE2, 16, \
                       __m128i, _mm_stream_si128)                                              \
    RELU_DEFINE_NT_ISA(relu_nt_##name##_avx2, tail, int_t, threshold, op, RELU_TARGET_AVX2, 32, \
                       __m256i, _mm256_stream_si256)                                           \
    RELU_DEFINE_NT_ISA(relu_nt_##name##_avx512, tail, int_t, threshold, op, RELU_TARGET_AVX512, \
                       64, __m512i, _mm512_stream_si512)
#define RELU_DEFINE_NT(name, int_t, threshold)                                                 \
    RELU_DEFINE_NT_OP(name, relu_tail_##name, int_t, threshold, RELU_OP_RELU)

#define RELU_NT_OF(name, unaligned_t, int_t, size, threshold) RELU_DEFINE_NT(name, int_t, threshold)
RELU_FOR_EACH_TYPE(RELU_NT_OF)
/* The harness's ceiling: the same loops with no compare. */
RELU_DEFINE_NT_OP(copy, relu_tail_copy, int8_t, 0, RELU_OP_COPY)

#define RELU_NT_TABLE(name) {NULL, relu_nt_##name##_sse2, relu_nt_##name##_avx2, relu_nt_##name##_avx512}

/* Streaming stores become visible to other threads (and to later loads) only after an sfence. */
static inline void
relu_store_fence(void)
{
    _mm_sfence();
}

/* The best streaming-store path this CPU runs. */
static relu_isa
relu_detect_isa(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
        return RELU_ISA_AVX512;
    }
    if (__builtin_cpu_supports("avx2")) {
        return RELU_ISA_AVX2;
    }
    return RELU_ISA_SSE2; /* baseline of x86-64 */
}
#else
#define RELU_NT_TABLE(name) {NULL, NULL, NULL, NULL}
static inline void
relu_store_fence(void)
{
}
static relu_isa
relu_detect_isa(void)
{
    return RELU_ISA_NONE;
}
#endif /* RELU_HAVE_NT */

/* ------------------------------------------------------------------------------------------ */
/* Work splitting and the thread pool                                                          */
/* ------------------------------------------------------------------------------------------ */

/* One element type's code: regular-store block and streaming-store variants per ISA. */
typedef struct {
    npy_intp elsize;
    relu_block_fn block;
    relu_nt_fn nt[RELU_ISA_COUNT];
} relu_kernel;

#define RELU_INDEX_OF(name, unaligned_t, int_t, size, threshold) RELU_K_##name,
enum { RELU_FOR_EACH_TYPE(RELU_INDEX_OF) RELU_K_COPY, RELU_K_COUNT };
#define RELU_KERNEL_OF(name, unaligned_t, int_t, size, threshold)                              \
    [RELU_K_##name] = {size, relu_block_##name, RELU_NT_TABLE(name)},
static const relu_kernel relu_kernels[RELU_K_COUNT] = {
    RELU_FOR_EACH_TYPE(RELU_KERNEL_OF)
    [RELU_K_COPY] = {1, relu_block_copy, RELU_NT_TABLE(copy)},
};

/*
 * Process-wide tuning. Read (relaxed) by every loop call, written by the setters under the GIL;
 * a call that races with a setter sees the old or the new value, either of which is valid.
 */
static RELU_ATOMIC(int) relu_num_threads = 1;
static RELU_ATOMIC(Py_ssize_t) relu_parallel_bytes = RELU_DEFAULT_PARALLEL_BYTES;
static RELU_ATOMIC(Py_ssize_t) relu_min_chunk_bytes = RELU_DEFAULT_MIN_CHUNK_BYTES;
static RELU_ATOMIC(Py_ssize_t) relu_nt_bytes = PY_SSIZE_T_MAX;
static RELU_ATOMIC(Py_ssize_t) relu_spin_ns = RELU_DEFAULT_SPIN_NS;
static RELU_ATOMIC(int) relu_nt_isa = RELU_ISA_NONE;
static relu_isa relu_best_isa = RELU_ISA_NONE;     /* set once at import */
static Py_ssize_t relu_l2_bytes = 0;               /* set once at import */
static Py_ssize_t relu_llc_bytes = 0;              /* set once at import */
static const char *relu_cache_source = "default";  /* where the cache sizes came from */

/* One loop call: what to run on which operands, cut into `parts` chunks for the threads. */
typedef struct {
    const relu_kernel *kernel;
    relu_nt_fn nt; /* non-NULL: contiguous, streaming stores */
    const char *in;
    char *out;
    npy_intp in_stride, out_stride;
    npy_intp n;
    int parts;
} relu_job;

static void
relu_run_range(const relu_job *job, npy_intp begin, npy_intp end)
{
    if (end <= begin) {
        return;
    }
    const char *in = job->in + begin * job->in_stride;
    char *out = job->out + begin * job->out_stride;
    if (job->nt != NULL) {
        job->nt(in, out, end - begin);
        relu_store_fence();
    }
    else {
        job->kernel->block(in, out, end - begin, job->in_stride, job->out_stride);
    }
}

/*
 * Start of chunk k of `parts` nearly equal chunks of [0, n). When the output is contiguous, the
 * boundary is moved down to a 64-byte line of the output, so that no cache line is written by
 * two threads and every streaming range starts on a whole line.
 */
static npy_intp
relu_chunk_start(const relu_job *job, int k)
{
    if (k <= 0) {
        return 0;
    }
    if (k >= job->parts) {
        return job->n;
    }
    const npy_intp n = job->n, parts = job->parts, elsize = job->kernel->elsize;
    npy_intp b = (n / parts) * k + ((n % parts) * k) / parts;
    if (job->out_stride == elsize && ((uintptr_t)job->out % (uintptr_t)elsize) == 0) {
        const uintptr_t addr = (uintptr_t)job->out + (uintptr_t)(b * elsize);
        b -= (npy_intp)((addr & 63) / (uintptr_t)elsize);
    }
    return b < 0 ? 0 : b;
}

/* Chunks per thread: a thread slowed down (a core shared with another process) hands its
 * remaining chunks to the others instead of holding up the call. */
enum { RELU_CHUNKS_PER_THREAD = 8 };

/*
 * How a call of n elements, `bytes` bytes of output, is cut: into *parts chunks for *threads
 * threads (the caller included). One thread and one part for small calls.
 */
static void
relu_plan(npy_intp n, npy_intp bytes, int *threads, int *parts)
{
    *threads = RELU_LOAD(relu_num_threads);
    *parts = 1;
    if (*threads <= 1 || bytes < RELU_LOAD(relu_parallel_bytes)) {
        *threads = 1;
        return;
    }
    const Py_ssize_t min_chunk = RELU_LOAD(relu_min_chunk_bytes);
    npy_intp count = (npy_intp)*threads * RELU_CHUNKS_PER_THREAD;
    if (min_chunk > 0 && bytes / min_chunk < count) {
        count = bytes / min_chunk;
    }
    if (count > n) {
        count = n;
    }
    *parts = count < 1 ? 1 : (int)count;
    if (*parts < *threads) {
        *threads = *parts;
    }
}

#if RELU_HAVE_THREADS
typedef struct relu_pool relu_pool;

typedef struct {
    relu_pool *pool;
    int id;                          /* 0, 1, ...: takes part in a job when id < active */
    unsigned long start_generation;  /* the pool's generation when this worker was started */
} relu_worker;

/*
 * A job is posted by bumping `generation` (under `lock`); every thread then claims chunks one at
 * a time from `claim`, whose high 32 bits carry the job's generation and low 32 bits the next
 * chunk: a worker that wakes up after its job has ended cannot claim a chunk of the next one.
 * `done` counts finished chunks; the caller waits for it to reach the job's parts.
 *
 * Waking a sleeping thread costs tens of microseconds in a virtual machine (~25 us measured in a
 * KVM guest: the idle vCPU has to be scheduled again), as much as 1 MiB of work. So a worker
 * that finishes a job, and the caller waiting for the last chunk, first spin (with a pause
 * instruction) for up to relu_spin_ns before sleeping on the condition variables: back-to-back
 * large calls then start at once, at the price of at most relu_spin_ns of CPU per thread after
 * each large call (onnxruntime and OpenMP workers spin for milliseconds).
 */
struct relu_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;             /* a new job: generation changed */
    pthread_cond_t finished;         /* done reached the job's parts */
    atomic_ulong generation;         /* incremented (under lock) for every job */
    int nworkers;                    /* started so far; only grows */
    int active;                      /* workers 0 .. active-1 take part in the current job */
    relu_job job;
    _Atomic(uint64_t) claim;
    atomic_int done;
    relu_worker workers[RELU_MAX_THREADS];
};

/*
 * The pool and the flag that gives one caller at a time the right to use (and create or grow)
 * it. A caller that cannot take the flag runs its call serially: no waiting, no deadlock.
 */
static relu_pool *relu_pool_instance = NULL; /* accessed only by the holder of relu_pool_busy */
static atomic_int relu_pool_busy = 0;

/* Run chunks of the job of `generation` until none is left; returns when there is nothing to claim. */
static void
relu_work(relu_pool *pool, const relu_job *job, unsigned long generation)
{
    const uint64_t tag = (uint64_t)(uint32_t)generation << 32;
    uint64_t current = atomic_load_explicit(&pool->claim, memory_order_acquire);
    for (;;) {
        if ((current & ~(uint64_t)UINT32_MAX) != tag || (uint32_t)current >= (uint32_t)job->parts) {
            return;
        }
        if (!atomic_compare_exchange_weak_explicit(&pool->claim, &current, current + 1,
                                                   memory_order_acq_rel, memory_order_acquire)) {
            continue; /* `current` was reloaded */
        }
        const int k = (int)(uint32_t)current;
        relu_run_range(job, relu_chunk_start(job, k), relu_chunk_start(job, k + 1));
        if (atomic_fetch_add_explicit(&pool->done, 1, memory_order_acq_rel) + 1 == job->parts) {
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
relu_spin_while_equal(atomic_ulong *word, unsigned long value, Py_ssize_t ns)
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
relu_spin_until_reached(atomic_int *count, int target, Py_ssize_t ns)
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
            relu_spin_while_equal(&pool->generation, seen, RELU_LOAD(relu_spin_ns));
            pthread_mutex_lock(&pool->lock);
            while (atomic_load_explicit(&pool->generation, memory_order_relaxed) == seen) {
                pthread_cond_wait(&pool->wake, &pool->lock);
            }
        }
        seen = atomic_load_explicit(&pool->generation, memory_order_relaxed);
        if (self->id < pool->active) {
            const relu_job job = pool->job;
            pthread_mutex_unlock(&pool->lock);
            relu_work(pool, &job, seen);
            pthread_mutex_lock(&pool->lock);
        }
    }
    return NULL; /* not reached: workers live as long as the process */
}

/* Called by the holder of relu_pool_busy: the pool with at least `workers` workers if possible. */
static relu_pool *
relu_pool_get(int workers)
{
    relu_pool *pool = relu_pool_instance;
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
        relu_pool_instance = pool;
    }
    if (workers > RELU_MAX_THREADS - 1) {
        workers = RELU_MAX_THREADS - 1;
    }
    if (pool->nworkers >= workers) {
        return pool;
    }
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) {
        return pool;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Workers inherit the creating thread's signal mask: block everything so that signals keep
     * going to the interpreter's threads. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    while (pool->nworkers < workers) {
        relu_worker *worker = &pool->workers[pool->nworkers];
        worker->pool = pool;
        worker->id = pool->nworkers;
        worker->start_generation = atomic_load_explicit(&pool->generation, memory_order_relaxed);
        pthread_t thread;
        if (pthread_create(&thread, &attr, relu_worker_main, worker) != 0) {
            break; /* run with the workers there are */
        }
        pool->nworkers++;
    }
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attr);
    return pool;
}

/* Run `job` on up to `threads` threads. Returns 0 (nothing done) if the pool is busy. */
static int
relu_run_parallel(relu_job *job, int threads)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&relu_pool_busy, &expected, 1,
                                                 memory_order_acquire, memory_order_relaxed)) {
        return 0;
    }
    relu_pool *pool = relu_pool_get(threads - 1);
    const int workers = pool == NULL ? 0 : (pool->nworkers < threads - 1 ? pool->nworkers : threads - 1);
    if (workers < 1) {
        atomic_store_explicit(&relu_pool_busy, 0, memory_order_release);
        return 0;
    }
    pthread_mutex_lock(&pool->lock);
    const unsigned long generation =
        atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1;
    pool->job = *job;
    pool->active = workers;
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->claim, (uint64_t)(uint32_t)generation << 32, memory_order_release);
    atomic_store_explicit(&pool->generation, generation, memory_order_release); /* spinners go */
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    relu_work(pool, job, generation);

    if (!relu_spin_until_reached(&pool->done, job->parts, RELU_LOAD(relu_spin_ns))) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load_explicit(&pool->done, memory_order_acquire) < job->parts) {
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
    relu_pool_instance = NULL;
    atomic_store_explicit(&relu_pool_busy, 0, memory_order_relaxed);
}

static int
relu_pool_workers(void)
{
    /* Informational only (for _tuning()): read without taking the flag. */
    relu_pool *pool = relu_pool_instance;
    return pool == NULL ? 0 : pool->nworkers;
}
#else
static int
relu_run_parallel(relu_job *job, int threads)
{
    (void)job;
    (void)threads;
    return 0;
}
static int
relu_pool_workers(void)
{
    return 0;
}
#endif /* RELU_HAVE_THREADS */

/* Store strategy of a call: by size (the ufunc loops), or forced (the harness's copies). */
typedef enum { RELU_STORES_AUTO, RELU_STORES_STREAMING, RELU_STORES_REGULAR } relu_stores;

/*
 * Run one kernel over n elements. RELU_STORES_AUTO streams when the output is at least
 * relu_nt_bytes, contiguous, aligned to its element size and not the input itself: in place,
 * every line is in the cache already (just loaded), so a streaming store saves no
 * read-for-ownership and only forces an early eviction (measured: 0.6 x regular stores).
 */
/*
 * Whether the bytes of the output (n elements of `elsize` at `out`, `out_stride` apart) meet the
 * bytes of the input anywhere, other than being the input itself (same address, same stride).
 *
 * NumPy makes no safety copy when the output starts before the input and a forward pass, one
 * element after the other, is correct (relu(x[16:], out=x[:-16]), relu(x[::2][:n], out=x[:n])):
 * then every element must be read before any element after it is written. Cutting the call into
 * chunks run by several threads, or walking several pages side by side with streaming stores,
 * breaks that order, so such calls run as one forward pass on the calling thread.
 */
static int
relu_partial_overlap(const char *in, const char *out, npy_intp n, npy_intp in_stride,
                     npy_intp out_stride, npy_intp elsize)
{
    if (n <= 0 || (in == out && in_stride == out_stride)) {
        return 0;
    }
    const uintptr_t in_span = (uintptr_t)(n - 1) * (uintptr_t)(in_stride < 0 ? -in_stride : in_stride);
    const uintptr_t out_span = (uintptr_t)(n - 1) * (uintptr_t)(out_stride < 0 ? -out_stride : out_stride);
    const uintptr_t in_lo = (uintptr_t)in - (in_stride < 0 ? in_span : 0);
    const uintptr_t out_lo = (uintptr_t)out - (out_stride < 0 ? out_span : 0);
    const uintptr_t in_hi = in_lo + in_span + (uintptr_t)elsize;   /* one past the last byte */
    const uintptr_t out_hi = out_lo + out_span + (uintptr_t)elsize;
    return in_lo < out_hi && out_lo < in_hi;
}

static void
relu_run(const relu_kernel *kernel, const char *in, char *out, npy_intp n, npy_intp in_stride,
         npy_intp out_stride, relu_stores stores)
{
    const npy_intp bytes = n * kernel->elsize;
    /* The common small call: one compare against each threshold, then the plain loop. */
    if (bytes < RELU_LOAD(relu_parallel_bytes) && bytes < RELU_LOAD(relu_nt_bytes) &&
        stores == RELU_STORES_AUTO) {
        kernel->block(in, out, n, in_stride, out_stride);
        return;
    }
    /* Overlapping operands (see relu_partial_overlap): one forward pass, regular stores. */
    if (relu_partial_overlap(in, out, n, in_stride, out_stride, kernel->elsize)) {
        kernel->block(in, out, n, in_stride, out_stride);
        return;
    }
    relu_job job = {kernel, NULL, in, out, in_stride, out_stride, n, 1};
    const int streamable = in_stride == kernel->elsize && out_stride == kernel->elsize &&
                           ((uintptr_t)out % (uintptr_t)kernel->elsize) == 0;
    const int stream = stores == RELU_STORES_STREAMING ||
                       (stores == RELU_STORES_AUTO && in != out && bytes >= RELU_LOAD(relu_nt_bytes));
    if (stream && streamable) {
        job.nt = kernel->nt[RELU_LOAD(relu_nt_isa)];
    }
    int threads;
    relu_plan(n, bytes, &threads, &job.parts);
    if (threads > 1 && relu_run_parallel(&job, threads)) {
        return;
    }
    relu_run_range(&job, 0, n);
}

/* The ArrayMethod strided loop: one per type, each a thin shim over relu_run. */
#define RELU_DEFINE_LOOP(name, unaligned_t, int_t, size, threshold)                            \
    static int relu_loop_##name(PyArrayMethod_Context *NPY_UNUSED(context),                   \
                                char *const data[], npy_intp const dimensions[],               \
                                npy_intp const strides[], NpyAuxData *NPY_UNUSED(auxdata))     \
    {                                                                                          \
        relu_run(&relu_kernels[RELU_K_##name], data[0], data[1], dimensions[0], strides[0],    \
                 strides[1], RELU_STORES_AUTO);                                                \
        return 0;                                                                              \
    }

RELU_FOR_EACH_TYPE(RELU_DEFINE_LOOP)

/* ------------------------------------------------------------------------------------------ */
/* Loop tables                                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    const char *name;                  /* ArrayMethod name, shown in numpy's error messages */
    PyArrayMethod_StridedLoop *loop;
} relu_loop_entry;

/* Order matters only for readability; the DType of each entry is filled in at import. */
enum { RELU_BUILTIN_LOOPS = 7 };
static const relu_loop_entry relu_builtin_loops[RELU_BUILTIN_LOOPS] = {
    {"relu_int8", relu_loop_int8},       {"relu_int16", relu_loop_int16},
    {"relu_int32", relu_loop_int32},     {"relu_int64", relu_loop_int64},
    {"relu_float16", relu_loop_float16}, {"relu_float32", relu_loop_float32},
    {"relu_float64", relu_loop_float64},
};
static const relu_loop_entry relu_bfloat16_loop = {"relu_bfloat16", relu_loop_bfloat16};

static int
relu_add_loop(PyObject *ufunc, const relu_loop_entry *entry, PyArray_DTypeMeta *dtype)
{
    PyArray_DTypeMeta *dtypes[2] = {dtype, dtype};
    /* The same loop serves aligned and unaligned data (its element types are aligned(1)). */
    PyType_Slot slots[] = {
        {NPY_METH_strided_loop, (void *)entry->loop},
#if RELU_SUPPORTS_UNALIGNED
        {NPY_METH_unaligned_strided_loop, (void *)entry->loop},
#endif
        {0, NULL},
    };
    PyArrayMethod_Spec spec = {
        .name = entry->name,
        .nin = 1,
        .nout = 1,
        .casting = NPY_NO_CASTING,
        .flags = NPY_METH_NO_FLOATINGPOINT_ERRORS |
                 (RELU_SUPPORTS_UNALIGNED ? NPY_METH_SUPPORTS_UNALIGNED : 0),
        .dtypes = dtypes,
        .slots = slots,
    };
    return PyUFunc_AddLoopFromSpec(ufunc, &spec);
}

/* The DType class of ml_dtypes.bfloat16, found at import (its type number is assigned at run time). */
static PyArray_DTypeMeta *
relu_bfloat16_dtype(void)
{
    PyObject *ml_dtypes = PyImport_ImportModule("ml_dtypes");
    if (ml_dtypes == NULL) {
        return NULL;
    }
    PyObject *scalar_type = PyObject_GetAttrString(ml_dtypes, "bfloat16");
    Py_DECREF(ml_dtypes);
    if (scalar_type == NULL) {
        return NULL;
    }
    PyArray_Descr *descr = NULL;
    int ok = PyArray_DescrConverter(scalar_type, &descr);
    Py_DECREF(scalar_type);
    if (!ok || descr == NULL) {
        return NULL;
    }
    if (descr->elsize != 2) {
        PyErr_Format(PyExc_ImportError,
                     "ml_dtypes.bfloat16 has itemsize %d, expected 2", (int)descr->elsize);
        Py_DECREF(descr);
        return NULL;
    }
    PyArray_DTypeMeta *dtype = (PyArray_DTypeMeta *)Py_TYPE(descr);
    Py_INCREF(dtype);
    Py_DECREF(descr);
    return dtype;
}

/* ------------------------------------------------------------------------------------------ */
/* Module definition                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* A number from a sysfs file ("2048K", "32M", "3"); 0 if unreadable. */
static Py_ssize_t
relu_read_sysfs_size(const char *path)
{
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        return 0;
    }
    long value = 0;
    char unit = 0;
    const int got = fscanf(file, "%ld%c", &value, &unit);
    fclose(file);
    if (got < 1 || value <= 0) {
        return 0;
    }
    Py_ssize_t bytes = (Py_ssize_t)value;
    if (got == 2 && (unit == 'K' || unit == 'k')) {
        bytes <<= 10;
    }
    else if (got == 2 && (unit == 'M' || unit == 'm')) {
        bytes <<= 20;
    }
    return bytes;
}

/*
 * Sizes of the L2 and of the last-level cache in bytes: from the C library (glibc's sysconf),
 * else from sysfs (the data/unified caches of cpu0), else defaults (1 MiB, 32 MiB).
 */
static void
relu_detect_caches(Py_ssize_t *l2, Py_ssize_t *llc, const char **source)
{
    *l2 = 0;
    *llc = 0;
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    const long l2_size = sysconf(_SC_LEVEL2_CACHE_SIZE), l3_size = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l2_size > 0) {
        *l2 = (Py_ssize_t)l2_size;
        *llc = l3_size > 0 ? (Py_ssize_t)l3_size : *l2;
        *source = "sysconf";
        return;
    }
#endif
    int llc_level = 0;
    for (int index = 0; index < 8; index++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
        const int level = (int)relu_read_sysfs_size(path);
        if (level <= 0) {
            break;
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", index);
        FILE *file = fopen(path, "r");
        char type[16] = "";
        if (file != NULL) {
            if (fscanf(file, "%15s", type) != 1) {
                type[0] = 0;
            }
            fclose(file);
        }
        if (strcmp(type, "Instruction") == 0) {
            continue;
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        const Py_ssize_t size = relu_read_sysfs_size(path);
        if (level == 2 && size > 0) {
            *l2 = size;
        }
        if (level >= llc_level && size > 0) {
            llc_level = level;
            *llc = size;
        }
    }
    *source = (*l2 > 0 || *llc > 0) ? "sysfs" : "default";
    if (*l2 <= 0) {
        *l2 = RELU_DEFAULT_L2_BYTES;
    }
    if (*llc <= 0) {
        *llc = RELU_DEFAULT_LLC_BYTES;
    }
}

/*
 * The output size from which the ufunc loops use streaming stores (out of place only).
 *
 * Streaming stores pay once input and output no longer fit in the caches that give a core more
 * bandwidth than memory does: they skip the read-for-ownership of the output and leave the
 * cache to the input. Where that happens depends on the cache design, so the rule is per
 * vendor, from measurements (BENCHMARKS.md):
 *  - Intel: from the size of the L2. On a Xeon (Emerald Rapids: 2 MiB L2, 260 MiB L3 shared by
 *    the whole socket, a 2-vCPU KVM guest) streaming stores win from 2 MiB outputs (1.3 x at
 *    4 MiB, 1.9 x at 512 MiB) and lose below (0.6 x at 64 KiB-1 MiB): the mesh L3 gives one
 *    core about what memory gives it.
 *  - others (AMD Zen measured): from twice the last-level cache; below that regular stores win
 *    (streaming ones run 0.6 x in the L3).
 * ONNX_RELU_NT_THRESHOLD overrides it (onnx_relu._threads reads it at import).
 */
static Py_ssize_t
relu_default_nt_bytes(Py_ssize_t l2, Py_ssize_t llc)
{
#if RELU_HAVE_NT
    if (__builtin_cpu_is("intel")) {
        return l2;
    }
#else
    (void)l2;
#endif
    return llc > PY_SSIZE_T_MAX / 2 ? PY_SSIZE_T_MAX : 2 * llc;
}

static PyObject *
relu_py_get_num_threads(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromLong(RELU_LOAD(relu_num_threads));
}

static PyObject *
relu_py_set_num_threads(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 1 || n > RELU_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "the number of threads must be in 1..%d, got %ld",
                     (int)RELU_MAX_THREADS, n);
        return NULL;
    }
    const int previous = RELU_LOAD(relu_num_threads);
    RELU_STORE(relu_num_threads, (int)n);
    return PyLong_FromLong(previous);
}

static PyObject *
relu_tuning_dict(void)
{
    const int isa = RELU_LOAD(relu_nt_isa);
    return Py_BuildValue(
        "{s:i,s:i,s:O,s:n,s:n,s:s,s:n,s:n,s:n,s:n,s:n,s:s,s:s,s:i}",
        "num_threads", RELU_LOAD(relu_num_threads),
        "max_threads", (int)RELU_MAX_THREADS,
        "threads_supported", RELU_HAVE_THREADS ? Py_True : Py_False,
        "l2_bytes", relu_l2_bytes,
        "llc_bytes", relu_llc_bytes,
        "cache_source", relu_cache_source,
        "parallel_threshold", RELU_LOAD(relu_parallel_bytes),
        "min_chunk", RELU_LOAD(relu_min_chunk_bytes),
        "nt_threshold", RELU_LOAD(relu_nt_bytes),
        "default_nt_threshold", relu_default_nt_bytes(relu_l2_bytes, relu_llc_bytes),
        "spin_ns", RELU_LOAD(relu_spin_ns),
        "nt_isa", relu_isa_names[isa],
        "best_nt_isa", relu_isa_names[relu_best_isa],
        "pool_workers", relu_pool_workers());
}

static PyObject *
relu_py_tuning(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return relu_tuning_dict();
}

static PyObject *
relu_py_set_tuning(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"parallel_threshold", "nt_threshold", "min_chunk", "nt_isa",
                               "spin_ns", NULL};
    Py_ssize_t parallel = -1, nt = -1, min_chunk = -1, spin = -1;
    const char *isa_name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$nnnzn:_set_tuning", keywords, &parallel,
                                     &nt, &min_chunk, &isa_name, &spin)) {
        return NULL;
    }
    int isa = -1;
    if (isa_name != NULL) {
        for (int i = 0; i < RELU_ISA_COUNT; i++) {
            if (strcmp(isa_name, relu_isa_names[i]) == 0) {
                isa = i;
            }
        }
        if (isa < 0 || isa > (int)relu_best_isa) {
            PyErr_Format(PyExc_ValueError,
                         "nt_isa '%s' is not available here; allowed: 'none' up to '%s'",
                         isa_name, relu_isa_names[relu_best_isa]);
            return NULL;
        }
    }
    PyObject *previous = relu_tuning_dict();
    if (previous == NULL) {
        return NULL;
    }
    /* Negative means "leave as it is"; 0 is a valid threshold (always) for the tests. */
    if (parallel >= 0) {
        RELU_STORE(relu_parallel_bytes, parallel);
    }
    if (nt >= 0) {
        RELU_STORE(relu_nt_bytes, nt);
    }
    if (min_chunk >= 0) {
        RELU_STORE(relu_min_chunk_bytes, min_chunk);
    }
    if (isa >= 0) {
        RELU_STORE(relu_nt_isa, isa);
    }
    if (spin >= 0) {
        RELU_STORE(relu_spin_ns, spin);
    }
    return previous;
}

static PyObject *
relu_py_copy(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"src", "dst", "nontemporal", NULL};
    PyObject *src_obj, *dst_obj;
    int nontemporal = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$p:_copy", keywords, &src_obj, &dst_obj,
                                     &nontemporal)) {
        return NULL;
    }
    Py_buffer src, dst;
    if (PyObject_GetBuffer(src_obj, &src, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(dst_obj, &dst, PyBUF_SIMPLE | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    PyObject *result = NULL;
    const char *s = (const char *)src.buf;
    char *d = (char *)dst.buf;
    if (src.len != dst.len) {
        PyErr_Format(PyExc_ValueError, "_copy needs buffers of the same size, got %zd and %zd bytes",
                     src.len, dst.len);
    }
    else if (s != d && s < d + dst.len && d < s + src.len) {
        PyErr_SetString(PyExc_ValueError, "_copy: the buffers overlap (only identical ones may)");
    }
    else {
        Py_BEGIN_ALLOW_THREADS
        relu_run(&relu_kernels[RELU_K_COPY], s, d, (npy_intp)src.len, 1, 1,
                 nontemporal ? RELU_STORES_STREAMING : RELU_STORES_REGULAR);
        Py_END_ALLOW_THREADS
        result = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&dst);
    PyBuffer_Release(&src);
    return result;
}

static PyMethodDef relu_methods[] = {
    {"_get_num_threads", relu_py_get_num_threads, METH_NOARGS,
     "_get_num_threads() -> int: the threads a large call may use (onnx_relu.get_num_threads)."},
    {"_set_num_threads", relu_py_set_num_threads, METH_O,
     "_set_num_threads(n) -> previous: set the thread count (onnx_relu.set_num_threads)."},
    {"_tuning", relu_py_tuning, METH_NOARGS,
     "_tuning() -> dict: thread count, thresholds in bytes, cache size, streaming-store ISA."},
    {"_set_tuning", (PyCFunction)(void (*)(void))relu_py_set_tuning, METH_VARARGS | METH_KEYWORDS,
     "_set_tuning(*, parallel_threshold, nt_threshold, min_chunk, nt_isa, spin_ns) -> previous.\n"
     "For tests and benchmarks; thresholds are output sizes in bytes, -1 leaves one unchanged."},
    {"_copy", (PyCFunction)(void (*)(void))relu_py_copy, METH_VARARGS | METH_KEYWORDS,
     "_copy(src, dst, *, nontemporal=True): the benchmark harness's copy ceiling.\n"
     "Copies with streaming (or regular) stores on the current threads, split like a relu call;\n"
     "src and dst: contiguous buffers of the same size, disjoint or identical (in place)."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(relu_ufunc_doc,
             "relu(x, /, out=None) -> y\n\n"
             "ONNX Relu as a ufunc: y = x where x > 0 or x is NaN (bits unchanged), +0 elsewhere.\n"
             "Loops: int8, int16, int32, int64, float16, float32, float64, bfloat16; no casting.\n"
             "Use onnx_relu.relu() for opset-aware type checks and clear errors.");

static struct PyModuleDef relu_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "onnx_relu._relu",
    .m_doc = "Compiled core of onnx-relu: the relu ufunc, its thread pool and tuning.",
    .m_size = -1,
    .m_methods = relu_methods,
};

PyMODINIT_FUNC
PyInit__relu(void)
{
    PyObject *module = NULL, *ufunc = NULL;
    PyArray_DTypeMeta *bfloat16 = NULL;

    import_array();
    import_umath();

#if RELU_HAVE_THREADS
    static int fork_handler_installed = 0;
    if (!fork_handler_installed) {
        if (pthread_atfork(NULL, NULL, relu_after_fork_in_child) != 0) {
            PyErr_SetString(PyExc_ImportError, "onnx_relu._relu: pthread_atfork failed");
            goto fail;
        }
        fork_handler_installed = 1;
    }
#endif
    relu_best_isa = relu_detect_isa();
    RELU_STORE(relu_nt_isa, (int)relu_best_isa);
    relu_detect_caches(&relu_l2_bytes, &relu_llc_bytes, &relu_cache_source);
    RELU_STORE(relu_nt_bytes, relu_default_nt_bytes(relu_l2_bytes, relu_llc_bytes));

    module = PyModule_Create(&relu_module);
    if (module == NULL) {
        goto fail;
    }
    /* No legacy loops: the ufunc has only the ArrayMethod loops below and so never casts. */
    ufunc = PyUFunc_FromFuncAndData(NULL, NULL, NULL, 0, 1, 1, PyUFunc_None, "relu",
                                    relu_ufunc_doc, 0);
    if (ufunc == NULL) {
        goto fail;
    }
    PyArray_DTypeMeta *builtin[RELU_BUILTIN_LOOPS] = {
        &PyArray_Int8DType, &PyArray_Int16DType, &PyArray_Int32DType, &PyArray_Int64DType,
        &PyArray_HalfDType, &PyArray_FloatDType, &PyArray_DoubleDType,
    };
    for (int i = 0; i < RELU_BUILTIN_LOOPS; i++) {
        if (relu_add_loop(ufunc, &relu_builtin_loops[i], builtin[i]) < 0) {
            goto fail;
        }
    }
    bfloat16 = relu_bfloat16_dtype();
    if (bfloat16 == NULL || relu_add_loop(ufunc, &relu_bfloat16_loop, bfloat16) < 0) {
        goto fail;
    }
    Py_CLEAR(bfloat16);
    if (PyModule_AddObject(module, "relu", ufunc) < 0) {
        goto fail;
    }
    ufunc = NULL; /* reference stolen by the module */
    if (PyModule_AddIntConstant(module, "MAX_THREADS", RELU_MAX_THREADS) < 0) {
        goto fail;
    }
    return module;

fail:
    Py_XDECREF(bfloat16);
    Py_XDECREF(ufunc);
    Py_XDECREF(module);
    return NULL;
}
