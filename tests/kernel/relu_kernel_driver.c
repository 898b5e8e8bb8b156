/*
 * relu_kernel_driver.c - the kernel of src/kernel checked on its own, without Python or NumPy.
 *
 * Build (tests/kernel/test_kernel_driver.py and tools/sanitize.sh do this):
 *   cc -std=c11 -O3 -pthread -Isrc/kernel src/kernel/relu_*.c tests/kernel/relu_kernel_driver.c
 * optionally with -DRELU_DISABLE_THREADS or -DRELU_DISABLE_NT (the kernel's portable builds) or
 * -fsanitize=address,undefined.
 *
 * What it runs, for each of the eight types, in every phase below:
 *  - sizes 0..257 elements at every element-aligned byte offset within a 64-byte line, for the
 *    input and for the output, contiguous and out of place: in the phase at the default tuning
 *    every (input, output) offset pair; in the forced phases every offset of each with the
 *    other at 0 (so every output alignment, which decides the streaming loops' first lines and
 *    the part boundaries, meets every misalignment of the input against it); plus unaligned
 *    operands (not on an element boundary: no streaming stores, any address);
 *  - the same sizes and offsets in place, in place strided, and strided (gaps and negative
 *    strides);
 *  - overlapping input and output in both directions (the output before the input, which NumPy
 *    passes without a copy, and after it), by 1 to 255 elements, strided and reversed;
 *  - the copy ceiling (relu_copy_ceiling), disjoint and in place, streaming and regular;
 *  - in the forced phases sizes of 16 KiB to 300 KB too, so that the streaming loops run their
 *    groups of pages inside each part; at the default tuning sizes around the parallel threshold.
 * Phases: thresholds forced to 0 (every call cut into parts for 2 threads and written with
 * streaming stores), once per streaming-store ISA this CPU has and once with regular stores;
 * streaming stores on one thread; and the tuning relu_kernel_init chose, with 2 threads.
 * --each-offset takes each offset rather than every pair at the default tuning too (quicker).
 *
 * Every result is compared with a scalar reference written here independently of the kernel: it
 * decodes the IEEE fields of the float formats (and, for float32/float64, agrees with a numeric
 * compare) and compares integers as numbers, and it replays the call as one forward pass over a
 * copy of the memory, which is the kernel's contract for overlapping operands. Every byte of
 * every buffer is compared, so the canary bytes around each operand and the gaps of strided
 * operands must come back unchanged. An out-of-place input (and every other in-place or
 * overlapping buffer) ends exactly where its allocation ends instead of in canary bytes, so
 * that AddressSanitizer sees any access past the last element.
 *
 * Exit status 0: every case passed; 1: a mismatch (the first ones are listed); 2: a setup error.
 */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relu_kernel.h"
#include "relu_tuning.h"

/* ------------------------------------------------------------------------------------------ */
/* The types and the reference                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* The driver's own description of the eight types (deliberately not the kernel's X-macro). */
typedef struct {
    const char *name;
    relu_type type;
    int bytes;
    int exponent_bits; /* 0: a signed integer */
    int mantissa_bits;
} type_info;

static const type_info TYPES[] = {
    {"int8", RELU_TYPE_int8, 1, 0, 0},
    {"int16", RELU_TYPE_int16, 2, 0, 0},
    {"int32", RELU_TYPE_int32, 4, 0, 0},
    {"int64", RELU_TYPE_int64, 8, 0, 0},
    {"float16", RELU_TYPE_float16, 2, 5, 10},
    {"bfloat16", RELU_TYPE_bfloat16, 2, 8, 7},
    {"float32", RELU_TYPE_float32, 4, 8, 23},
    {"float64", RELU_TYPE_float64, 8, 11, 52},
};
enum { NTYPES = sizeof TYPES / sizeof TYPES[0] };

/* An element's bits (little-endian: x86-64 and aarch64), with fixed-size copies the compiler
 * turns into single loads and stores. */
static inline uint64_t
load_bits(const unsigned char *p, int bytes)
{
    switch (bytes) {
    case 1: return *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void
store_bits(unsigned char *p, uint64_t bits, int bytes)
{
    switch (bytes) {
    case 1: *p = (unsigned char)bits; break;
    case 2: { uint16_t v = (uint16_t)bits; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)bits; memcpy(p, &v, 4); break; }
    default: memcpy(p, &bits, 8); break;
    }
}

/* Relu of one element's bits, by the ONNX rule, from the element's value. */
static uint64_t
reference(const type_info *t, uint64_t bits)
{
    const int width = 8 * t->bytes;
    if (t->exponent_bits == 0) {
        /* A signed integer: sign-extend, compare as a number. */
        const int64_t value = width == 64 ? (int64_t)bits : (int64_t)(bits << (64 - width)) >> (64 - width);
        return value > 0 ? bits : 0;
    }
    const uint64_t sign = (bits >> (width - 1)) & 1;
    const uint64_t exponent = (bits >> t->mantissa_bits) & ((UINT64_C(1) << t->exponent_bits) - 1);
    const uint64_t mantissa = bits & ((UINT64_C(1) << t->mantissa_bits) - 1);
    const int nan = exponent == (UINT64_C(1) << t->exponent_bits) - 1 && mantissa != 0;
    const int positive = sign == 0 && (exponent != 0 || mantissa != 0); /* +0 is not */
    const uint64_t result = (nan || positive) ? bits : 0;
    /* The same decision from the value, where C has the format: NaN (x != x) or x > 0. */
    if (t->type == RELU_TYPE_float32 || t->type == RELU_TYPE_float64) {
        double x;
        if (t->type == RELU_TYPE_float32) {
            float f;
            uint32_t b32 = (uint32_t)bits;
            memcpy(&f, &b32, 4);
            x = (double)f;
        }
        else {
            memcpy(&x, &bits, 8);
        }
        const int keep = x != x || x > 0.0;
        if (keep != (result == bits && (bits != 0))) {
            fprintf(stderr, "driver: the reference disagrees with itself on %s 0x%" PRIx64 "\n",
                    t->name, bits);
            exit(2);
        }
    }
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* Input values                                                                                */
/* ------------------------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t
next_random(void)
{
    uint64_t x = rng_state; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* Bits of a float with these fields. */
static uint64_t
float_bits(const type_info *t, uint64_t sign, uint64_t exponent, uint64_t mantissa)
{
    return (sign << (8 * t->bytes - 1)) | (exponent << t->mantissa_bits) | mantissa;
}

enum { MAX_SPECIALS = 32 };

/* The values every relu implementation gets wrong somewhere, as bit patterns. */
static int
special_values(const type_info *t, uint64_t *out)
{
    int count = 0;
    const int width = 8 * t->bytes;
    const uint64_t all = width == 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
    if (t->exponent_bits == 0) {
        const uint64_t min = UINT64_C(1) << (width - 1), max = min - 1;
        const uint64_t values[] = {0, 1, all /* -1 */, min, max, min + 1, max - 1, 2, all - 1};
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
            out[count++] = values[i];
        }
        return count;
    }
    const uint64_t top = (UINT64_C(1) << t->exponent_bits) - 1;
    const uint64_t mant_all = (UINT64_C(1) << t->mantissa_bits) - 1;
    const uint64_t quiet = UINT64_C(1) << (t->mantissa_bits - 1);
    const uint64_t bias = top >> 1;
    for (uint64_t sign = 0; sign < 2; sign++) {
        out[count++] = float_bits(t, sign, 0, 0);              /* +-0 */
        out[count++] = float_bits(t, sign, top, 0);            /* +-inf */
        out[count++] = float_bits(t, sign, top, quiet);        /* quiet NaN */
        out[count++] = float_bits(t, sign, top, 1);            /* signalling NaN */
        out[count++] = float_bits(t, sign, top, mant_all);     /* NaN, every payload bit */
        out[count++] = float_bits(t, sign, top, quiet | 5);    /* quiet NaN with a payload */
        out[count++] = float_bits(t, sign, 0, 1);              /* smallest subnormal */
        out[count++] = float_bits(t, sign, 0, mant_all);       /* largest subnormal */
        out[count++] = float_bits(t, sign, 1, 0);              /* smallest normal */
        out[count++] = float_bits(t, sign, top - 1, mant_all); /* largest finite */
        out[count++] = float_bits(t, sign, bias, 0);           /* 1.0 */
        out[count++] = float_bits(t, sign, bias - 1, 1);       /* just above 0.5 */
    }
    return count;
}

/*
 * Mixed values per type: specials at varying places, random bits between. Made once; operands
 * are filled from it at a rotating start, so that each case sees other values at other places.
 */
enum { POOL_ELEMENTS = 4099 };
static unsigned char value_pool[NTYPES][POOL_ELEMENTS * 8];
static size_t pool_start[NTYPES];

static void
make_value_pools(void)
{
    for (int ti = 0; ti < NTYPES; ti++) {
        const type_info *t = &TYPES[ti];
        uint64_t specials[MAX_SPECIALS];
        const int nspecial = special_values(t, specials);
        for (size_t i = 0; i < POOL_ELEMENTS; i++) {
            const uint64_t r = next_random();
            const uint64_t bits = (r & 3) != 0 ? specials[(r >> 8) % (uint64_t)nspecial] : next_random();
            store_bits(value_pool[ti] + i * (size_t)t->bytes, bits, t->bytes);
        }
    }
}

/* `count` elements of type TYPES[ti] at dst. */
static void
fill_values(int ti, unsigned char *dst, size_t count)
{
    const size_t e = (size_t)TYPES[ti].bytes;
    size_t at = pool_start[ti], done = 0;
    while (done < count) {
        const size_t take = count - done < POOL_ELEMENTS - at ? count - done : POOL_ELEMENTS - at;
        memcpy(dst + done * e, value_pool[ti] + at * e, take * e);
        done += take;
        at = (at + take) % POOL_ELEMENTS;
    }
    pool_start[ti] = (pool_start[ti] + 97) % POOL_ELEMENTS;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

enum { LINE = 64, GUARD = 64, CANARY = 0xA5 };

/*
 * One allocation holding operands: GUARD canary bytes, then `offset` more (the first operand byte
 * sits at an address that is `offset` modulo 64), then `span` bytes, then `back` canary bytes
 * (0: the operand ends where the allocation ends, for AddressSanitizer).
 */
typedef struct {
    unsigned char *base;
    size_t size;
    unsigned char *lo; /* first byte of the span */
} buffer;

static buffer
buffer_make(size_t offset, size_t span, size_t back)
{
    buffer b;
    b.size = GUARD + offset + span + back;
    void *memory = NULL;
    if (posix_memalign(&memory, LINE, b.size == 0 ? 1 : b.size) != 0) {
        fprintf(stderr, "driver: out of memory (%zu bytes)\n", b.size);
        exit(2);
    }
    b.base = (unsigned char *)memory;
    memset(b.base, CANARY, b.size);
    b.lo = b.base + GUARD + offset;
    return b;
}

/* ------------------------------------------------------------------------------------------ */
/* Cases                                                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    long cases;
    long failures;
} tally;

enum { MAX_REPORTED = 20 };

/* Byte span of n elements `stride` apart, and where element 0 sits within it. */
static size_t
span_of(ptrdiff_t n, ptrdiff_t stride, int bytes, size_t *first)
{
    if (n <= 0) {
        *first = 0;
        return 0;
    }
    const size_t step = (size_t)(stride < 0 ? -stride : stride);
    *first = stride < 0 ? (size_t)(n - 1) * step : 0;
    return (size_t)(n - 1) * step + (size_t)bytes;
}

/* One forward pass of Relu over memory `image`, as the kernel's contract describes it. */
static void
forward_pass(const type_info *t, const unsigned char *in, unsigned char *out, ptrdiff_t n,
             ptrdiff_t in_stride, ptrdiff_t out_stride)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        const uint64_t bits = load_bits(in + i * in_stride, t->bytes);
        store_bits(out + i * out_stride, reference(t, bits), t->bytes);
    }
}

static void
report(tally *tl, const char *phase, const char *layout, const type_info *t, ptrdiff_t n,
       long a, long b, const buffer *buf, const unsigned char *want)
{
    tl->failures++;
    if (tl->failures > MAX_REPORTED) {
        return;
    }
    size_t at = 0;
    while (at < buf->size && buf->base[at] == want[at]) {
        at++;
    }
    fprintf(stderr,
            "FAIL [%s] %s %s n=%td (%ld, %ld): byte %td from the operand start is 0x%02x, "
            "expected 0x%02x\n",
            phase, layout, t->name, n, a, b, (buf->base + at) - buf->lo, buf->base[at], want[at]);
}

/*
 * Out of place: input and output in buffers of their own at byte offsets in_off / out_off of a
 * line, strides in elements.
 */
static void
case_two_buffers(tally *tl, const char *phase, const char *layout, const type_info *t, ptrdiff_t n,
                 size_t in_off, size_t out_off, ptrdiff_t in_step, ptrdiff_t out_step)
{
    const ptrdiff_t in_stride = in_step * t->bytes, out_stride = out_step * t->bytes;
    size_t in_first, out_first;
    const size_t in_span = span_of(n, in_stride, t->bytes, &in_first);
    const size_t out_span = span_of(n, out_stride, t->bytes, &out_first);
    buffer in = buffer_make(in_off, in_span, 0);
    buffer out = buffer_make(out_off, out_span, GUARD);
    fill_values((int)(t - TYPES), in.lo, in_span / (size_t)t->bytes);
    unsigned char *in_want = malloc(in.size), *out_want = malloc(out.size);
    if (in_want == NULL || out_want == NULL) {
        exit(2);
    }
    memcpy(in_want, in.base, in.size);
    memcpy(out_want, out.base, out.size);
    forward_pass(t, in_want + (in.lo - in.base) + in_first, out_want + (out.lo - out.base) + out_first,
                 n, in_stride, out_stride);

    relu_compute(t->type, in.lo + in_first, out.lo + out_first, n, in_stride, out_stride);

    tl->cases++;
    if (memcmp(out.base, out_want, out.size) != 0) {
        report(tl, phase, layout, t, n, (long)in_off, (long)out_off, &out, out_want);
    }
    else if (memcmp(in.base, in_want, in.size) != 0) {
        report(tl, phase, "input changed", t, n, (long)in_off, (long)out_off, &in, in_want);
    }
    free(in_want);
    free(out_want);
    free(in.base);
    free(out.base);
}

/*
 * One buffer holding both operands: the input's element 0 at byte in_at of the span, the
 * output's at out_at; in place when they are equal with equal strides, overlapping otherwise.
 */
static void
case_one_buffer(tally *tl, const char *phase, const char *layout, const type_info *t, ptrdiff_t n,
                size_t offset, size_t span, size_t in_at, size_t out_at, ptrdiff_t in_step,
                ptrdiff_t out_step)
{
    const ptrdiff_t in_stride = in_step * t->bytes, out_stride = out_step * t->bytes;
    buffer buf = buffer_make(offset, span, (n & 1) ? GUARD : 0);
    fill_values((int)(t - TYPES), buf.lo, span / (size_t)t->bytes);
    unsigned char *want = malloc(buf.size);
    if (want == NULL) {
        exit(2);
    }
    memcpy(want, buf.base, buf.size);
    unsigned char *want_lo = want + (buf.lo - buf.base);
    forward_pass(t, want_lo + in_at, want_lo + out_at, n, in_stride, out_stride);

    relu_compute(t->type, buf.lo + in_at, buf.lo + out_at, n, in_stride, out_stride);

    tl->cases++;
    if (memcmp(buf.base, want, buf.size) != 0) {
        report(tl, phase, layout, t, n, (long)in_at, (long)out_at, &buf, want);
    }
    free(want);
    free(buf.base);
}

/* Stride pairs (in elements) of the strided cases: gaps and negative strides. */
static const ptrdiff_t STRIDES[][2] = {{2, 1}, {1, 2}, {3, -2}, {-1, 1}, {1, -1}, {-2, -3}};
enum { NSTRIDES = sizeof STRIDES / sizeof STRIDES[0] };

/* Which (input, output) offset pairs the contiguous out-of-place cases take. */
typedef enum {
    ALL_PAIRS,   /* every input offset with every output offset */
    EACH_OFFSET, /* every offset of each with the other at 0: every output alignment, and every
                    misalignment of the input against the output */
} pairing;

/* Out of place (contiguous and strided), in place and in place strided, at `offsets` (bytes). */
static void
layouts_of_size(tally *tl, const char *phase, const type_info *t, ptrdiff_t n, const size_t *offsets,
                int noffsets, pairing pairs)
{
    const size_t e = (size_t)t->bytes;
    for (int i = 0; i < noffsets; i++) {
        if (pairs == ALL_PAIRS) {
            for (int j = 0; j < noffsets; j++) {
                case_two_buffers(tl, phase, "contiguous", t, n, offsets[i], offsets[j], 1, 1);
            }
        }
        else {
            case_two_buffers(tl, phase, "contiguous", t, n, offsets[i], offsets[0], 1, 1);
            if (i > 0) {
                case_two_buffers(tl, phase, "contiguous", t, n, offsets[0], offsets[i], 1, 1);
            }
        }
        if (e > 1) { /* not aligned to the element size: no streaming stores, any address */
            case_two_buffers(tl, phase, "unaligned", t, n, offsets[i] + 1, (offsets[i] + 3) % LINE, 1, 1);
        }
        case_one_buffer(tl, phase, "in place", t, n, offsets[i], (size_t)n * e, 0, 0, 1, 1);
        const int s = i % NSTRIDES;
        case_two_buffers(tl, phase, "strided", t, n, offsets[i], offsets[(i + 1) % noffsets],
                         STRIDES[s][0], STRIDES[s][1]);
        size_t first;
        const size_t strided_span = span_of(n, 2 * (ptrdiff_t)e, (int)e, &first);
        case_one_buffer(tl, phase, "in place strided", t, n, offsets[i], strided_span, 0, 0, 2, 2);
    }
}

/* Overlapping operands in both directions, at one offset of the buffer; `shifts` are the
 * distances between input and output in elements. */
static void
overlaps_of_size(tally *tl, const char *phase, const type_info *t, ptrdiff_t n, size_t offset,
                 const ptrdiff_t *shifts, int nshifts)
{
    const size_t e = (size_t)t->bytes;
    if (n <= 0) {
        return;
    }
    for (int k = 0; k < nshifts; k++) {
        const size_t d = (size_t)shifts[k] * e, span = (size_t)n * e + d;
        case_one_buffer(tl, phase, "out before in", t, n, offset, span, d, 0, 1, 1);
        case_one_buffer(tl, phase, "out after in", t, n, offset, span, 0, d, 1, 1);
    }
    size_t first;
    const size_t wide = span_of(n, 2 * (ptrdiff_t)e, (int)e, &first);
    case_one_buffer(tl, phase, "strided in over out", t, n, offset, wide, 0, 0, 2, 1);
    case_one_buffer(tl, phase, "strided out over in", t, n, offset, wide, 0, 0, 1, 2);
    const size_t span = (size_t)n * e;
    case_one_buffer(tl, phase, "reversed", t, n, offset, span, 0, span - e, 1, -1);
    case_one_buffer(tl, phase, "reversed in", t, n, offset, span, span - e, 0, -1, 1);
}

/* relu_copy_ceiling: disjoint and identical buffers, streaming and regular stores. */
static void
copies_of_size(tally *tl, const char *phase, size_t bytes, size_t in_off, size_t out_off)
{
    static const type_info bytes_type = {"copy", RELU_TYPE_int8, 1, 0, 0};
    for (int streaming = 0; streaming < 2; streaming++) {
        buffer src = buffer_make(in_off, bytes, 0), dst = buffer_make(out_off, bytes, GUARD);
        fill_values(0, src.lo, bytes); /* int8 values: any bytes */
        unsigned char *want = malloc(dst.size);
        if (want == NULL) {
            exit(2);
        }
        memcpy(want, dst.base, dst.size);
        memcpy(want + (dst.lo - dst.base), src.lo, bytes);
        relu_copy_ceiling(src.lo, dst.lo, bytes, streaming);
        tl->cases++;
        if (memcmp(dst.base, want, dst.size) != 0) {
            report(tl, phase, streaming ? "copy streaming" : "copy regular", &bytes_type,
                   (ptrdiff_t)bytes, (long)in_off, (long)out_off, &dst, want);
        }
        /* In place: nothing may change. */
        memcpy(want, src.base, src.size);
        relu_copy_ceiling(src.lo, src.lo, bytes, streaming);
        tl->cases++;
        if (memcmp(src.base, want, src.size) != 0) {
            report(tl, phase, "copy in place", &bytes_type, (ptrdiff_t)bytes, (long)in_off,
                   (long)in_off, &src, want);
        }
        free(want);
        free(src.base);
        free(dst.base);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Phases                                                                                      */
/* ------------------------------------------------------------------------------------------ */

enum { SMALL_SIZES = 258 };
static const ptrdiff_t SMALL_SHIFTS[] = {1, 2, 3, 7, 16, 63, 64, 65, 255};
/* Sizes in bytes whose parts (16 of them at 2 threads, thresholds 0) still reach the page
 * groups of the streaming loops (16 KiB at 4 streams), and the groups' edges on one thread. */
static const ptrdiff_t MEDIUM_BYTES[] = {16384, 16384 + 64 + 8, 3 * 16384 + 100, 300000};
static const ptrdiff_t LARGE_SHIFTS[] = {1, 64};
/* Byte offsets of the medium and large cases: aligned to every element size. */
static const size_t SPARSE_OFFSETS[] = {0, 24, 56};
enum { NSPARSE = sizeof SPARSE_OFFSETS / sizeof SPARSE_OFFSETS[0] };

/* Sizes 0..257 of every type at every element-aligned offset, and the copy ceiling. */
static void
sweep_small(tally *tl, const char *phase, pairing pairs)
{
    for (int ti = 0; ti < NTYPES; ti++) {
        const type_info *t = &TYPES[ti];
        size_t offsets[LINE];
        int noffsets = 0;
        for (size_t o = 0; o < LINE; o += (size_t)t->bytes) {
            offsets[noffsets++] = o;
        }
        for (ptrdiff_t n = 0; n < SMALL_SIZES; n++) {
            layouts_of_size(tl, phase, t, n, offsets, noffsets, pairs);
            overlaps_of_size(tl, phase, t, n, offsets[(size_t)n % (size_t)noffsets], SMALL_SHIFTS,
                             (int)(sizeof SMALL_SHIFTS / sizeof SMALL_SHIFTS[0]));
        }
    }
    for (size_t bytes = 0; bytes < SMALL_SIZES; bytes++) {
        copies_of_size(tl, phase, bytes, bytes % LINE, (bytes * 7) % LINE);
    }
}

/* Larger sizes (in bytes; one element more than fits) at a few offsets. */
static void
sweep_sizes(tally *tl, const char *phase, const ptrdiff_t *sizes_bytes, int nsizes)
{
    for (int ti = 0; ti < NTYPES; ti++) {
        const type_info *t = &TYPES[ti];
        for (int s = 0; s < nsizes; s++) {
            const ptrdiff_t n = sizes_bytes[s] / t->bytes + 1;
            layouts_of_size(tl, phase, t, n, SPARSE_OFFSETS, NSPARSE, EACH_OFFSET);
            overlaps_of_size(tl, phase, t, n, SPARSE_OFFSETS[s % NSPARSE], LARGE_SHIFTS,
                             (int)(sizeof LARGE_SHIFTS / sizeof LARGE_SHIFTS[0]));
        }
    }
    for (int s = 0; s < nsizes; s++) {
        copies_of_size(tl, phase, (size_t)sizes_bytes[s] + 5, 3, 0);
        copies_of_size(tl, phase, (size_t)sizes_bytes[s], 0, 40);
    }
}

/* Calls just below and above `bytes` of output (the parallel threshold): a few layouts. */
static void
sweep_around(tally *tl, const char *phase, ptrdiff_t bytes)
{
    static const ptrdiff_t shift[] = {1};
    for (int ti = 0; ti < NTYPES; ti++) {
        const type_info *t = &TYPES[ti];
        for (ptrdiff_t n = (bytes - 64) / t->bytes; n < bytes / t->bytes + 72; n += 64 / t->bytes + 72) {
            case_two_buffers(tl, phase, "contiguous", t, n, 0, 24, 1, 1);
            case_one_buffer(tl, phase, "in place", t, n, 56, (size_t)n * (size_t)t->bytes, 0, 0, 1, 1);
            case_two_buffers(tl, phase, "strided", t, n, 8, 0, 2, 1);
            overlaps_of_size(tl, phase, t, n, 0, shift, 1);
        }
    }
    copies_of_size(tl, phase, (size_t)bytes + 3, 5, 0);
}

/* Every call threaded (parts of any size) and streaming in groups of 4 pages; the spin time as
 * it is. */
static const relu_thresholds FORCED = {
    .parallel_bytes = 0, .min_part_bytes = 0, .nt_bytes = 0, .spin_ns = -1, .nt_streams = 4};

static void
set_tuning(int threads, relu_thresholds thresholds, relu_isa isa)
{
    if (relu_set_num_threads(threads) < 0 || relu_set_nt_isa(isa) < 0) {
        fprintf(stderr, "driver: the kernel refused %d threads or ISA %s\n", threads,
                relu_isa_name(isa));
        exit(2);
    }
    relu_set_thresholds(thresholds);
}

static double
seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

static double phase_start;

static void
end_phase(const char *phase, tally *tl, long before)
{
    printf("%-40s %9ld cases in %5.1f s\n", phase, tl->cases - before, seconds() - phase_start);
    phase_start = seconds();
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    /* --each-offset: the default-tuning phase too takes every offset of input and output with
     * the other at 0 rather than every pair (a quicker run for the portable builds). */
    pairing default_pairs = ALL_PAIRS;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--each-offset") == 0) {
            default_pairs = EACH_OFFSET;
        }
        else {
            fprintf(stderr, "usage: %s [--each-offset]\n", argv[0]);
            return 2;
        }
    }
    for (int ti = 0; ti < NTYPES; ti++) {
        if (relu_type_size(TYPES[ti].type) != (size_t)TYPES[ti].bytes) {
            fprintf(stderr, "driver: relu_type_size(%s) is %zu, expected %d\n", TYPES[ti].name,
                    relu_type_size(TYPES[ti].type), TYPES[ti].bytes);
            return 2;
        }
    }
    if (relu_kernel_init() != 0) {
        fprintf(stderr, "driver: relu_kernel_init failed\n");
        return 2;
    }
    const relu_tuning_report defaults = relu_get_tuning();
    printf("kernel: threads %s, streaming stores up to %s, caches %td / %td bytes (%s), "
           "thresholds: parallel %td, streaming %td\n",
           defaults.threads_supported ? "yes" : "no (serial build)",
           relu_isa_name(defaults.best_nt_isa), defaults.caches.l2_bytes,
           defaults.caches.llc_bytes, defaults.caches.source, defaults.thresholds.parallel_bytes,
           defaults.thresholds.nt_bytes);

    make_value_pools();
    tally tl = {0, 0};
    char phase[96];
    phase_start = seconds();
    /* Thresholds 0: every call threaded and streaming (regular stores with "none"). */
    for (int isa = (int)defaults.best_nt_isa; isa >= RELU_ISA_NONE; isa--) {
        long before = tl.cases;
        snprintf(phase, sizeof phase, "2 threads, %s, thresholds 0", relu_isa_name((relu_isa)isa));
        set_tuning(2, FORCED, (relu_isa)isa);
        sweep_small(&tl, phase, EACH_OFFSET);
        sweep_sizes(&tl, phase, MEDIUM_BYTES, (int)(sizeof MEDIUM_BYTES / sizeof MEDIUM_BYTES[0]));
        end_phase(phase, &tl, before);
    }
    /* One thread with streaming stores: each call is one run of the streaming loop, with its
     * pages walked as one stream, in groups of 3 and of 4 (nt_streams). */
    static const ptrdiff_t STREAMS[] = {1, 3, 4};
    for (size_t s = 0; s < sizeof STREAMS / sizeof STREAMS[0]; s++) {
        long before = tl.cases;
        snprintf(phase, sizeof phase, "1 thread, %s, thresholds 0, %td streams",
                 relu_isa_name(defaults.best_nt_isa), STREAMS[s]);
        relu_thresholds forced = FORCED;
        forced.nt_streams = STREAMS[s];
        set_tuning(1, forced, defaults.best_nt_isa);
        sweep_sizes(&tl, phase, MEDIUM_BYTES, (int)(sizeof MEDIUM_BYTES / sizeof MEDIUM_BYTES[0]));
        end_phase(phase, &tl, before);
    }
    /* The tuning relu_kernel_init chose, 2 threads: small calls and calls around the thresholds. */
    {
        long before = tl.cases;
        snprintf(phase, sizeof phase, "2 threads, default tuning");
        set_tuning(2, defaults.thresholds, defaults.nt_isa);
        sweep_small(&tl, phase, default_pairs);
        sweep_around(&tl, phase, defaults.thresholds.parallel_bytes);
        end_phase(phase, &tl, before);
    }
    printf("total: %ld cases, %ld failures\n", tl.cases, tl.failures);
    if (tl.failures > MAX_REPORTED) {
        fprintf(stderr, "(%ld more failures not listed)\n", tl.failures - MAX_REPORTED);
    }
    return tl.failures == 0 ? 0 : 1;
}
