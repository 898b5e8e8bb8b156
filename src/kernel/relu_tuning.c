/*
 * relu_tuning.c - cache detection and the process-wide tuning (see relu_tuning.h).
 */
#include "relu_tuning.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h> /* sysconf */
#endif

/* When the cache sizes cannot be read. */
#define RELU_DEFAULT_L2_BYTES ((ptrdiff_t)1 << 20)
#define RELU_DEFAULT_LLC_BYTES ((ptrdiff_t)32 << 20)
/* Threads pay from about 2 MiB outputs: waking a sleeping worker costs ~25 us in a KVM guest
 * (measured: 2 threads 0.6 x at 1 MiB, 1.03 x at 2 MiB, 1.4 x at 4 MiB; benchmarks/threshold_scan.py). */
#define RELU_DEFAULT_PARALLEL_BYTES ((ptrdiff_t)2 << 20)
#define RELU_DEFAULT_MIN_CHUNK_BYTES ((ptrdiff_t)256 << 10)
/* How long pool threads spin before sleeping (see struct relu_pool in relu_pool.c). */
#define RELU_DEFAULT_SPIN_NS ((ptrdiff_t)100000)

/* Until relu_tuning_init: one thread, regular stores. */
RELU_API relu_settings relu_tuning = {
    .num_threads = 1,
    .parallel_bytes = RELU_DEFAULT_PARALLEL_BYTES,
    .min_chunk_bytes = RELU_DEFAULT_MIN_CHUNK_BYTES,
    .nt_bytes = PTRDIFF_MAX,
    .spin_ns = RELU_DEFAULT_SPIN_NS,
    .nt_isa = RELU_ISA_NONE,
};

/* Found once by relu_tuning_init. */
static relu_isa relu_best_isa = RELU_ISA_NONE;
static relu_caches relu_found_caches = {0, 0, "default"};
static relu_vendor relu_found_vendor = RELU_VENDOR_OTHER;

static const char *const relu_isa_names[RELU_ISA_COUNT] = {"none", "sse2", "avx2", "avx512"};

const char *
relu_isa_name(relu_isa isa)
{
    return (unsigned)isa < RELU_ISA_COUNT ? relu_isa_names[isa] : "?";
}

int
relu_isa_from_name(const char *name)
{
    for (int i = 0; i < RELU_ISA_COUNT; i++) {
        if (strcmp(name, relu_isa_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* The best streaming-store path this CPU runs. */
static relu_isa
relu_detect_isa(void)
{
#if RELU_HAVE_NT
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
        return RELU_ISA_AVX512;
    }
    if (__builtin_cpu_supports("avx2")) {
        return RELU_ISA_AVX2;
    }
    return RELU_ISA_SSE2; /* baseline of x86-64 */
#else
    return RELU_ISA_NONE;
#endif
}

relu_vendor
relu_detect_vendor(void)
{
#if RELU_HAVE_NT
    __builtin_cpu_init();
    if (__builtin_cpu_is("intel")) {
        return RELU_VENDOR_INTEL;
    }
#endif
    return RELU_VENDOR_OTHER;
}

/* A number from a sysfs file ("2048K", "32M", "3"); 0 if unreadable. */
static ptrdiff_t
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
    ptrdiff_t bytes = (ptrdiff_t)value;
    if (got == 2 && (unit == 'K' || unit == 'k')) {
        bytes <<= 10;
    }
    else if (got == 2 && (unit == 'M' || unit == 'm')) {
        bytes <<= 20;
    }
    return bytes;
}

/* <root>/devices/system/cpu/cpu0/cache/index<index>/<name> into path; 0 if it does not fit. */
static int
relu_sysfs_cache_path(char *path, size_t size, const char *root, int index, const char *name)
{
    const int length = snprintf(path, size, "%s/devices/system/cpu/cpu0/cache/index%d/%s", root,
                                index, name);
    return length > 0 && (size_t)length < size;
}

int
relu_caches_from_sysfs(const char *sysfs_root, relu_caches *caches)
{
    caches->l2_bytes = 0;
    caches->llc_bytes = 0;
    int llc_level = 0;
    for (int index = 0; index < 8; index++) {
        char path[4096];
        if (!relu_sysfs_cache_path(path, sizeof path, sysfs_root, index, "level")) {
            break;
        }
        const int level = (int)relu_read_sysfs_size(path);
        if (level <= 0) {
            break;
        }
        /* "type" and "size" are no longer than "level": their paths fit too. */
        relu_sysfs_cache_path(path, sizeof path, sysfs_root, index, "type");
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
        relu_sysfs_cache_path(path, sizeof path, sysfs_root, index, "size");
        const ptrdiff_t size = relu_read_sysfs_size(path);
        if (level == 2 && size > 0) {
            caches->l2_bytes = size;
        }
        if (level >= llc_level && size > 0) {
            llc_level = level;
            caches->llc_bytes = size;
        }
    }
    const int found = caches->l2_bytes > 0 || caches->llc_bytes > 0;
    if (found) {
        caches->source = "sysfs";
    }
    return found;
}

relu_caches
relu_detect_caches(void)
{
    relu_caches caches = {0, 0, "default"};
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    const long l2_size = sysconf(_SC_LEVEL2_CACHE_SIZE), l3_size = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l2_size > 0) {
        caches.l2_bytes = (ptrdiff_t)l2_size;
        caches.llc_bytes = l3_size > 0 ? (ptrdiff_t)l3_size : caches.l2_bytes;
        caches.source = "sysconf";
        return caches;
    }
#endif
    if (!relu_caches_from_sysfs("/sys", &caches)) {
        caches.source = "default";
    }
    if (caches.l2_bytes <= 0) {
        caches.l2_bytes = RELU_DEFAULT_L2_BYTES;
    }
    if (caches.llc_bytes <= 0) {
        caches.llc_bytes = RELU_DEFAULT_LLC_BYTES;
    }
    return caches;
}

/*
 * The output size from which relu_compute uses streaming stores (out of place only).
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
 * ONNX_RELU_NT_THRESHOLD overrides it (the Python package reads it at import).
 */
ptrdiff_t
relu_default_nt_bytes(const relu_caches *caches, relu_vendor vendor)
{
    if (vendor == RELU_VENDOR_INTEL) {
        return caches->l2_bytes;
    }
    return caches->llc_bytes > PTRDIFF_MAX / 2 ? PTRDIFF_MAX : 2 * caches->llc_bytes;
}

void
relu_tuning_init(void)
{
    relu_best_isa = relu_detect_isa();
    RELU_STORE(relu_tuning.nt_isa, (int)relu_best_isa);
    relu_found_caches = relu_detect_caches();
    relu_found_vendor = relu_detect_vendor();
    RELU_STORE(relu_tuning.nt_bytes, relu_default_nt_bytes(&relu_found_caches, relu_found_vendor));
}

int
relu_get_num_threads(void)
{
    return RELU_LOAD(relu_tuning.num_threads);
}

int
relu_set_num_threads(int count)
{
    if (count < 1 || count > RELU_MAX_THREADS) {
        return -1;
    }
    const int previous = RELU_LOAD(relu_tuning.num_threads);
    RELU_STORE(relu_tuning.num_threads, count);
    return previous;
}

static void
relu_set_if_given(RELU_ATOMIC(ptrdiff_t) *setting, ptrdiff_t value)
{
    if (value >= 0) {
        RELU_STORE(*setting, value);
    }
}

void
relu_set_thresholds(relu_thresholds thresholds)
{
    relu_set_if_given(&relu_tuning.parallel_bytes, thresholds.parallel_bytes);
    relu_set_if_given(&relu_tuning.min_chunk_bytes, thresholds.min_chunk_bytes);
    relu_set_if_given(&relu_tuning.nt_bytes, thresholds.nt_bytes);
    relu_set_if_given(&relu_tuning.spin_ns, thresholds.spin_ns);
}

int
relu_set_nt_isa(relu_isa isa)
{
    if ((unsigned)isa > (unsigned)relu_best_isa) {
        return -1;
    }
    RELU_STORE(relu_tuning.nt_isa, (int)isa);
    return 0;
}

relu_tuning_report
relu_get_tuning(void)
{
    relu_tuning_report report = {
        .num_threads = RELU_LOAD(relu_tuning.num_threads),
        .threads_supported = RELU_HAVE_THREADS,
        .thresholds = {RELU_LOAD(relu_tuning.parallel_bytes),
                       RELU_LOAD(relu_tuning.min_chunk_bytes), RELU_LOAD(relu_tuning.nt_bytes),
                       RELU_LOAD(relu_tuning.spin_ns)},
        .default_nt_bytes = relu_default_nt_bytes(&relu_found_caches, relu_found_vendor),
        .nt_isa = (relu_isa)RELU_LOAD(relu_tuning.nt_isa),
        .best_nt_isa = relu_best_isa,
        .caches = relu_found_caches,
    };
    return report;
}
