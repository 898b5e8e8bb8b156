/*
 * relu_kernel.c - the loops of relu_kernel.h, their dispatch and the copy ceiling.
 *
 * Relu is memory bound, so the work is to move bytes at the machine's limit:
 *  - Regular stores: plain C loops that compilers vectorise. On x86-64 with GCC or Clang each is
 *    compiled three times (baseline SSE2, x86-64-v3 = AVX2, x86-64-v4 = AVX-512) and the best one
 *    is picked when the program is loaded (target_clones); the build never uses -march=native.
 *    SSE2 has no 64-bit signed compare, which is why the int64/float64 loops need the clones.
 *  - Non-temporal (streaming) stores, out of place, for calls whose output is larger than the
 *    caches that give a core more bandwidth than memory (threshold chosen from the cache sizes,
 *    see relu_default_nt_bytes in relu_tuning.c): the stores bypass the caches, so there is no
 *    read-for-ownership of the destination and no eviction of useful lines. In place the loops
 *    always use regular stores (the line was just loaded: nothing to save). On x86-64, written
 *    with GCC vector extensions and the streaming-store intrinsics in functions compiled for
 *    SSE2, AVX2 or AVX-512 and chosen at run time (the tuning's nt_isa, detected with
 *    __builtin_cpu_supports); an sfence ends every run of streaming stores. On aarch64, the
 *    same loops with STNP (see below). The destination is first brought to a 64-byte boundary
 *    with regular stores. Elsewhere the regular loops serve.
 *  - Threads: a large call (contiguous or strided) is cut into parts that the thread pool
 *    (relu_pool.c) runs together with the calling thread.
 */
#include "relu_kernel.h"

#include <string.h>

#include "relu_pool.h"
#include "relu_tuning.h"

#if RELU_HAVE_NT && defined(__x86_64__)
#include <immintrin.h>
#endif

/*
 * Element types that may sit at any address and alias anything, so that the loops are correct
 * for any pointer a caller passes (RELU_SUPPORTS_UNALIGNED). NumPy 2.4 still copies unaligned
 * operands through aligned buffers before calling its loops (seen in gdb, and unaligned calls
 * run ~1.6x slower), so this buys correctness whatever the caller does, not speed.
 */
#if RELU_SUPPORTS_UNALIGNED
#define RELU_ELEMENT_ATTRS __attribute__((aligned(1), may_alias))
#else
#define RELU_ELEMENT_ATTRS
#endif

/* relu_any_<int_t>: the element type for any address, by the X-macro's integer type. */
#define RELU_ANY_ELEMENT(int_t) typedef int_t RELU_ELEMENT_ATTRS relu_any_##int_t;
RELU_FOR_EACH_ELEMENT_INT(RELU_ANY_ELEMENT)

/* Run-time dispatch between ISA levels, where the toolchain and the C library support it. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define RELU_DISPATCH __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#endif
#endif
#ifndef RELU_DISPATCH
#define RELU_DISPATCH
#endif

/* ------------------------------------------------------------------------------------------ */
/* Regular stores                                                                              */
/* ------------------------------------------------------------------------------------------ */

/*
 * relu_strided_<name>(in, out, n, in_stride, out_stride): n elements, strides in bytes, regular
 * stores. The contiguous branch and the strided branch have the same body; the contiguous one is
 * written with indices so that the compiler vectorises it. Neither uses `restrict`: in == out
 * (in place) and every other overlap keep the result of a forward pass, element by element (the
 * compiler checks the distance before it uses vectors). relu_tail_<name> is the same contiguous
 * loop for the few elements before and after a run of streaming stores; it is inlined into the
 * ISA-specific functions below.
 */
#define RELU_DEFINE_STRIDED(name, elem_t, threshold)                                           \
    static inline void relu_tail_##name(const char *in, char *out, ptrdiff_t n)               \
    {                                                                                          \
        const elem_t *src = (const elem_t *)in;                                                \
        elem_t *dst = (elem_t *)out;                                                           \
        for (ptrdiff_t i = 0; i < n; i++) {                                                    \
            const elem_t v = src[i];                                                           \
            dst[i] = RELU_RULE(v, threshold);                                                  \
        }                                                                                      \
    }                                                                                          \
    RELU_DISPATCH static void relu_strided_##name(const char *in, char *out, ptrdiff_t n,      \
                                                ptrdiff_t in_stride, ptrdiff_t out_stride)     \
    {                                                                                          \
        if (in_stride == (ptrdiff_t)sizeof(elem_t) && out_stride == (ptrdiff_t)sizeof(elem_t)) { \
            relu_tail_##name(in, out, n); /* inlined into each ISA clone, so vectorised */     \
        }                                                                                      \
        else {                                                                                 \
            for (ptrdiff_t i = 0; i < n; i++) {                                                \
                const elem_t v = *(const elem_t *)(in + i * in_stride);                        \
                *(elem_t *)(out + i * out_stride) = RELU_RULE(v, threshold);                   \
            }                                                                                  \
        }                                                                                      \
    }

#define RELU_STRIDED_OF(name, int_t, threshold)                                                \
    RELU_DEFINE_STRIDED(name, relu_any_##int_t, threshold)
RELU_FOR_EACH_TYPE(RELU_STRIDED_OF)

/*
 * The copy used by the benchmark harness as its ceiling (relu_copy_ceiling): the same structure
 * as a Relu strided loop without the compare, so that Relu and ceiling differ only in the
 * arithmetic.
 * It moves whole 64-byte lines; the empty asm keeps the compiler from turning the loop into a
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
relu_strided_copy(const char *in, char *out, ptrdiff_t n, ptrdiff_t in_stride,
                  ptrdiff_t out_stride)
{
    ptrdiff_t i = 0;
    if (in_stride == 1 && out_stride == 1) {
        for (; i + 64 <= n; i += 64) {
            relu_line line;
            memcpy(&line, in + i, 64);
            memcpy(out + i, &line, 64);
            RELU_COMPILER_BARRIER();
        }
    }
    for (; i < n; i++) {
        *(relu_any_int8_t *)(out + i * out_stride) = *(const relu_any_int8_t *)(in + i * in_stride);
    }
}

typedef void (*relu_strided_fn)(const char *, char *, ptrdiff_t, ptrdiff_t, ptrdiff_t);
/* Contiguous, out aligned to the element size; n elements; streaming stores. */
typedef void (*relu_nt_fn)(const char *, char *, ptrdiff_t);

/* ------------------------------------------------------------------------------------------ */
/* Streaming stores                                                                            */
/* ------------------------------------------------------------------------------------------ */

#if RELU_HAVE_NT
static inline void
relu_tail_copy(const char *in, char *out, ptrdiff_t n)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        ((relu_any_int8_t *)out)[i] = ((const relu_any_int8_t *)in)[i];
    }
}

/*
 * relu_nt_<name>_<isa>(in, out, n): contiguous in and out, out aligned to the element size
 * (in may have any alignment); n elements; in == out is allowed. The caller issues the sfence.
 *
 * Regular stores up to the first 64-byte boundary of out; then groups of nt_streams pages (the
 * setting, read once per call; 0 counts as 1) with streaming stores, walking the pages of a group
 * side by side (RELU_NT_STEP bytes of each page in turn); then whole lines; then the last
 * elements with regular stores. Several streams a page apart keep more reads in flight than one
 * on Intel (glibc's memcpy does the same for large copies); AMD's prefetchers do best with one
 * sequential stream. The default is chosen by vendor: relu_default_nt_streams (relu_tuning.c).
 */
#define RELU_NT_PAGE_BYTES 4096
#define RELU_NT_STEP 256

/* RELU_RULE on a vector: a GCC vector compare gives all-ones lanes where v > limit, zero lanes
 * elsewhere, so the mask keeps v exactly where the rule does and gives 0 elsewhere. */
#define RELU_OP_RELU(v, limit) ((v > limit) & v)
#define RELU_OP_COPY(v, limit) ((void)(limit), v)

#define RELU_DEFINE_NT_ISA(fname, tail, int_t, threshold, op, isa_attrs, vbytes, vec_t, stream) \
    isa_attrs static void fname(const char *in, char *out, ptrdiff_t n)                        \
    {                                                                                          \
        typedef int_t relu_vec __attribute__((vector_size(vbytes)));                           \
        const relu_vec limit = (relu_vec){0} + (int_t)(threshold);                             \
        const size_t elsize = sizeof(int_t), total = (size_t)n * elsize;                       \
        size_t pos = (size_t)((64 - ((uintptr_t)out & 63)) & 63);                              \
        if (pos > total) {                                                                     \
            pos = total;                                                                       \
        }                                                                                      \
        tail(in, out, (ptrdiff_t)(pos / elsize));                                              \
        /* One page walked alone is the line loop below: the groups need two or more. */       \
        const ptrdiff_t streams = RELU_LOAD(relu_tuning.nt_streams);                           \
        const size_t pages = streams > 1 && (size_t)streams <= total / RELU_NT_PAGE_BYTES      \
                                 ? (size_t)streams                                             \
                                 : 0;                                                          \
        for (; pages != 0 && pos + pages * RELU_NT_PAGE_BYTES <= total;                        \
             pos += pages * RELU_NT_PAGE_BYTES) {                                              \
            for (size_t step = 0; step < RELU_NT_PAGE_BYTES; step += RELU_NT_STEP) {           \
                for (size_t page = 0; page < pages; page++) {                                  \
                    const size_t at = pos + page * RELU_NT_PAGE_BYTES + step;                  \
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
        tail(in + pos, out + pos, (ptrdiff_t)((total - pos) / elsize));                        \
    }

#if defined(__x86_64__)
#define RELU_TARGET_SSE2 __attribute__((target("sse2")))
#define RELU_TARGET_AVX2 __attribute__((target("avx2")))
#define RELU_TARGET_AVX512 __attribute__((target("avx512f,avx512bw")))

#define RELU_DEFINE_NT_OP(name, tail, int_t, threshold, op)                                   \
    RELU_DEFINE_NT_ISA(relu_nt_##name##_sse2, tail, int_t, threshold, op, RELU_TARGET_SSE2, 16, \
                       __m128i, _mm_stream_si128)                                              \
    RELU_DEFINE_NT_ISA(relu_nt_##name##_avx2, tail, int_t, threshold, op, RELU_TARGET_AVX2, 32, \
                       __m256i, _mm256_stream_si256)                                           \
    RELU_DEFINE_NT_ISA(relu_nt_##name##_avx512, tail, int_t, threshold, op, RELU_TARGET_AVX512, \
                       64, __m512i, _mm512_stream_si512)
#else /* aarch64 */
/*
 * aarch64: STNP (store pair, non-temporal hint) of two 16-byte NEON registers, 32 bytes per
 * instruction, in the same page-interleaved loops as on x86-64. NEON is part of the base
 * instruction set, so there is one level (RELU_ISA_STNP) and no run-time dispatch. GCC has no
 * non-temporal store builtin for aarch64 (Clang's __builtin_nontemporal_store is Clang-only),
 * hence the one line of inline assembly; it is the only instruction the loops need beyond what
 * the compiler generates for the vector compare and mask.
 *
 * The hint only says the data need not stay in the caches: STNP obeys the ordinary ordering
 * rules for stores (the Arm architecture's non-temporal exception is for loads, LDNP), so no
 * barrier is needed before the pool's release operations publish the results (relu_pool.c:
 * each finished part is announced with a release increment that the caller acquires), and
 * relu_store_fence is empty here.
 *
 * Arm64 speed is unmeasured (the project runs arm64 only under emulation): the threshold comes
 * from the caches by the same rule as unknown x86-64 vendors (relu_default_nt_bytes), and
 * `onnx-relu bench --scan` on real hardware measures the crossover and prints the setting.
 */
typedef int8_t relu_nt_pair __attribute__((vector_size(32)));
static inline void
relu_stnp_32(relu_nt_pair *to, relu_nt_pair v)
{
    typedef int8_t relu_q __attribute__((vector_size(16)));
    relu_q lo, hi;
    memcpy(&lo, &v, 16);
    memcpy(&hi, (const char *)&v + 16, 16);
    __asm__ __volatile__("stnp %q1, %q2, [%0]" : : "r"(to), "w"(lo), "w"(hi) : "memory");
}

#define RELU_DEFINE_NT_OP(name, tail, int_t, threshold, op)                                   \
    RELU_DEFINE_NT_ISA(relu_nt_##name##_stnp, tail, int_t, threshold, op, , 32, relu_nt_pair,  \
                       relu_stnp_32)
#endif /* x86-64, aarch64 */

#define RELU_NT_OF(name, int_t, threshold)                                                     \
    RELU_DEFINE_NT_OP(name, relu_tail_##name, int_t, threshold, RELU_OP_RELU)
RELU_FOR_EACH_TYPE(RELU_NT_OF)
/* The harness's ceiling: the same loops with no compare. */
RELU_DEFINE_NT_OP(copy, relu_tail_copy, int8_t, 0, RELU_OP_COPY)

#if defined(__x86_64__)
#define RELU_NT_TABLE(name) {NULL, relu_nt_##name##_sse2, relu_nt_##name##_avx2, relu_nt_##name##_avx512}

/* Streaming stores become visible to other threads (and to later loads) only after an sfence. */
static inline void
relu_store_fence(void)
{
    _mm_sfence();
}
#else
#define RELU_NT_TABLE(name) {NULL, relu_nt_##name##_stnp, NULL, NULL}

static inline void
relu_store_fence(void)
{
}
#endif
#else /* !RELU_HAVE_NT */
#define RELU_NT_TABLE(name) {NULL, NULL, NULL, NULL}
static inline void
relu_store_fence(void)
{
}
#endif /* RELU_HAVE_NT */

/* ------------------------------------------------------------------------------------------ */
/* One call                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* One element type's code: regular-store strided loop and streaming-store variants per ISA. */
typedef struct {
    ptrdiff_t elsize;
    relu_strided_fn strided;
    relu_nt_fn nt[RELU_ISA_COUNT];
} relu_kernel;

/* Indexed by relu_type; the copy ceiling comes after the types (at RELU_TYPE_COUNT). */
enum { RELU_KERNEL_COPY = RELU_TYPE_COUNT, RELU_KERNEL_COUNT };
#define RELU_KERNEL_OF(name, int_t, threshold)                                                 \
    [RELU_TYPE_##name] = {sizeof(int_t), relu_strided_##name, RELU_NT_TABLE(name)},
static const relu_kernel relu_kernels[RELU_KERNEL_COUNT] = {
    RELU_FOR_EACH_TYPE(RELU_KERNEL_OF)
    [RELU_KERNEL_COPY] = {1, relu_strided_copy, RELU_NT_TABLE(copy)},
};

/* What one call runs on which operands; the pool's threads run ranges of it. */
typedef struct {
    const relu_kernel *kernel;
    relu_nt_fn nt; /* non-NULL: contiguous, streaming stores */
    const char *in;
    char *out;
    ptrdiff_t in_stride, out_stride;
} relu_task;

static void
relu_run_range(const void *task_ptr, ptrdiff_t begin, ptrdiff_t end)
{
    const relu_task *task = (const relu_task *)task_ptr;
    if (end <= begin) {
        return;
    }
    const char *in = task->in + begin * task->in_stride;
    char *out = task->out + begin * task->out_stride;
    if (task->nt != NULL) {
        task->nt(in, out, end - begin);
        relu_store_fence();
    }
    else {
        task->kernel->strided(in, out, end - begin, task->in_stride, task->out_stride);
    }
}

/*
 * Whether the bytes of the output (n elements of `elsize` at `out`, `out_stride` apart) meet the
 * bytes of the input anywhere, other than being the input itself (same address, same stride).
 *
 * NumPy makes no safety copy when the output starts before the input and a forward pass, one
 * element after the other, is correct (relu(x[16:], out=x[:-16]), relu(x[::2][:n], out=x[:n])):
 * then every element must be read before any element after it is written. Cutting the call into
 * parts run by several threads, or walking several pages side by side with streaming stores,
 * breaks that order, so such calls run as one forward pass on the calling thread.
 */
static int
relu_partial_overlap(const char *in, const char *out, ptrdiff_t n, ptrdiff_t in_stride,
                     ptrdiff_t out_stride, ptrdiff_t elsize)
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

/* Store strategy of a call: by size (relu_compute), or forced (the harness's copies). */
typedef enum { RELU_STORES_AUTO, RELU_STORES_STREAMING, RELU_STORES_REGULAR } relu_stores;

/*
 * Run one kernel over n elements. RELU_STORES_AUTO streams when the output is at least the
 * tuning's nt_bytes, contiguous, aligned to its element size and not the input itself: in place,
 * every line is in the cache already (just loaded), so a streaming store saves no
 * read-for-ownership and only forces an early eviction (measured: 0.6 x regular stores).
 */
static void
relu_runner_part(void *call, size_t k)
{
    relu_call_run_part((const relu_call *)call, (int)k);
}

static void
relu_run(const relu_kernel *kernel, const char *in, char *out, ptrdiff_t n, ptrdiff_t in_stride,
         ptrdiff_t out_stride, relu_stores stores, const relu_runner *runner)
{
    const ptrdiff_t bytes = n * kernel->elsize;
    /* The common small call: one compare against each threshold, then the plain loop. */
    if (bytes < RELU_LOAD(relu_tuning.parallel_bytes) && bytes < RELU_LOAD(relu_tuning.nt_bytes) &&
        stores == RELU_STORES_AUTO) {
        kernel->strided(in, out, n, in_stride, out_stride);
        return;
    }
    /* Overlapping operands (see relu_partial_overlap): one forward pass, regular stores. */
    if (relu_partial_overlap(in, out, n, in_stride, out_stride, kernel->elsize)) {
        kernel->strided(in, out, n, in_stride, out_stride);
        return;
    }
    relu_task task = {kernel, NULL, in, out, in_stride, out_stride};
    const int streamable = in_stride == kernel->elsize && out_stride == kernel->elsize &&
                           ((uintptr_t)out % (uintptr_t)kernel->elsize) == 0;
    const int stream = stores == RELU_STORES_STREAMING ||
                       (stores == RELU_STORES_AUTO && in != out && bytes >= RELU_LOAD(relu_tuning.nt_bytes));
    if (stream && streamable) {
        task.nt = kernel->nt[RELU_LOAD(relu_tuning.nt_isa)];
    }
    relu_call call = {relu_run_range, &task, n, 1, out, out_stride, kernel->elsize};
    int threads;
    if (runner != NULL) {
        relu_split_for(n, bytes, runner->threads, &threads, &call.parts);
        if (threads > 1 &&
            runner->parallel_for(runner->context, relu_runner_part, &call, (size_t)call.parts)) {
            return;
        }
    }
    else {
        relu_split(n, bytes, &threads, &call.parts);
        if (threads > 1 && relu_pool_run(&call, threads)) {
            return;
        }
    }
    relu_run_range(&task, 0, n);
}

/*
 * A call over rows (relu_compute_rows): the size policy of relu_run, decided once for the whole
 * call, with parts of whole rows. The rows of a view that NumPy cannot merge into one loop call
 * (x[:, :n], x[::2]) are the pool's units, so that a call of many short rows starts the pool
 * and streams like the same bytes contiguous.
 */
typedef struct {
    const relu_kernel *kernel;
    relu_nt_fn nt; /* non-NULL: streaming stores */
    const char *in;
    char *out;
    ptrdiff_t run; /* elements per row, contiguous in both operands */
    int ndim;      /* outer axes, row-major: rows = product of shape */
    ptrdiff_t shape[RELU_ROWS_MAX_NDIM], in_strides[RELU_ROWS_MAX_NDIM],
        out_strides[RELU_ROWS_MAX_NDIM];
} relu_rows_task;

static void
relu_run_rows(const void *task_ptr, ptrdiff_t begin, ptrdiff_t end)
{
    const relu_rows_task *task = (const relu_rows_task *)task_ptr;
    if (end <= begin) {
        return;
    }
    /* The outer index of row `begin`, then counted up like an odometer. */
    ptrdiff_t index[RELU_ROWS_MAX_NDIM];
    const char *in = task->in;
    char *out = task->out;
    ptrdiff_t rest = begin;
    for (int axis = task->ndim - 1; axis >= 0; axis--) {
        index[axis] = rest % task->shape[axis];
        rest /= task->shape[axis];
        in += index[axis] * task->in_strides[axis];
        out += index[axis] * task->out_strides[axis];
    }
    const ptrdiff_t elsize = task->kernel->elsize;
    for (ptrdiff_t row = begin; row < end; row++) {
        if (task->nt != NULL) {
            task->nt(in, out, task->run);
        }
        else {
            task->kernel->strided(in, out, task->run, elsize, elsize);
        }
        for (int axis = task->ndim - 1; axis >= 0; axis--) {
            in += task->in_strides[axis];
            out += task->out_strides[axis];
            if (++index[axis] < task->shape[axis]) {
                break;
            }
            in -= index[axis] * task->in_strides[axis];
            out -= index[axis] * task->out_strides[axis];
            index[axis] = 0;
        }
    }
    if (task->nt != NULL) {
        relu_store_fence();
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The API                                                                                     */
/* ------------------------------------------------------------------------------------------ */

int
relu_kernel_init(void)
{
    if (relu_pool_install_fork_handler() != 0) {
        return -1;
    }
    relu_tuning_init();
    return 0;
}

size_t
relu_type_size(relu_type type)
{
    return (size_t)relu_kernels[type].elsize;
}

void
relu_compute(relu_type type, const void *in, void *out, ptrdiff_t n, ptrdiff_t in_stride,
             ptrdiff_t out_stride)
{
    relu_run(&relu_kernels[type], (const char *)in, (char *)out, n, in_stride, out_stride,
             RELU_STORES_AUTO, NULL);
}

void
relu_compute_on(const relu_runner *runner, relu_type type, const void *in, void *out, ptrdiff_t n,
                ptrdiff_t in_stride, ptrdiff_t out_stride)
{
    relu_run(&relu_kernels[type], (const char *)in, (char *)out, n, in_stride, out_stride,
             RELU_STORES_AUTO, runner);
}

int
relu_compute_rows(relu_type type, const void *in, void *out, ptrdiff_t run, int ndim,
                  const ptrdiff_t *shape, const ptrdiff_t *in_strides,
                  const ptrdiff_t *out_strides)
{
    if (ndim < 0 || ndim > RELU_ROWS_MAX_NDIM || run < 0) {
        return -1;
    }
    relu_rows_task task = {&relu_kernels[type], NULL, (const char *)in, (char *)out, run, ndim,
                           {0}, {0}, {0}};
    ptrdiff_t rows = 1;
    for (int axis = 0; axis < ndim; axis++) {
        task.shape[axis] = shape[axis];
        task.in_strides[axis] = in_strides[axis];
        task.out_strides[axis] = out_strides[axis];
        rows *= shape[axis];
    }
    if (rows == 0 || run == 0) {
        return 0;
    }
    const ptrdiff_t elsize = task.kernel->elsize;
    const ptrdiff_t bytes = rows * run * elsize;
    /* Streaming as relu_run decides it: the whole call's output at least nt_bytes, not in place,
     * aligned to the element (each row then is too: its strides are multiples of elsize). */
    int aligned = ((uintptr_t)out % (uintptr_t)elsize) == 0;
    for (int axis = 0; axis < ndim; axis++) {
        aligned &= (task.out_strides[axis] % elsize) == 0;
    }
    if (in != out && aligned && bytes >= RELU_LOAD(relu_tuning.nt_bytes)) {
        task.nt = task.kernel->nt[RELU_LOAD(relu_tuning.nt_isa)];
    }
    /* Parts of whole rows (out_stride 0: no moving of boundaries to the output's lines). */
    relu_call call = {relu_run_rows, &task, rows, 1, (const char *)out, 0, elsize};
    int threads;
    relu_split(rows, bytes, &threads, &call.parts);
    if (threads > 1 && relu_pool_run(&call, threads)) {
        return 0;
    }
    relu_run_rows(&task, 0, rows);
    return 0;
}

void
relu_copy_ceiling(const void *src, void *dst, size_t bytes, int streaming)
{
    relu_run(&relu_kernels[RELU_KERNEL_COPY], (const char *)src, (char *)dst, (ptrdiff_t)bytes, 1,
             1, streaming ? RELU_STORES_STREAMING : RELU_STORES_REGULAR, NULL);
}
