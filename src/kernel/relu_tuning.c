/*
 * relu_tuning.c - cache detection and the process-wide tuning (see relu_tuning.h).
 */
#include "relu_tuning.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h> /* __cpuid: the vendor string */
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h> /* sysconf */
#endif

/* When the cache sizes cannot be read. */
#define RELU_DEFAULT_L2_BYTES ((ptrdiff_t)1 << 20)
#define RELU_DEFAULT_LLC_BYTES ((ptrdiff_t)32 << 20)
/* Threads pay from about 2 MiB outputs: waking a sleeping worker costs ~25 us in a KVM guest
 * (BENCHMARKS.md, "Waking a sleeping thread is expensive in this VM"). */
#define RELU_DEFAULT_PARALLEL_BYTES ((ptrdiff_t)2 << 20)
#define RELU_DEFAULT_MIN_PART_BYTES ((ptrdiff_t)256 << 10)
/* How long pool threads spin before sleeping (see struct relu_pool in relu_pool.c). */
#define RELU_DEFAULT_SPIN_NS ((ptrdiff_t)100000)
/* Pages the streaming-store loop walks side by side, by vendor (relu_default_nt_streams). */
#define RELU_DEFAULT_NT_STREAMS ((ptrdiff_t)4)

/* Until relu_tuning_init: one thread, regular stores. */
RELU_API relu_settings relu_tuning = {
    .num_threads = 1,
    .parallel_bytes = RELU_DEFAULT_PARALLEL_BYTES,
    .min_part_bytes = RELU_DEFAULT_MIN_PART_BYTES,
    .nt_bytes = PTRDIFF_MAX,
    .spin_ns = RELU_DEFAULT_SPIN_NS,
    .nt_streams = RELU_DEFAULT_NT_STREAMS,
    .nt_isa = RELU_ISA_NONE,
};

/* Found once by relu_tuning_init, before any call reads them (its caller runs it once and
 * publishes the kernel after it: pthread_once in the NumPy module), then only read. */
static relu_isa relu_best_isa = RELU_ISA_NONE;
static relu_caches relu_found_caches = {0, 0, 0, "default"};
static relu_vendor relu_found_vendor = RELU_VENDOR_OTHER;

/* The names of this architecture's levels (NULL: no such level here). */
#if defined(__aarch64__)
static const char *const relu_isa_names[RELU_ISA_COUNT] = {"none", "stnp", NULL, NULL};
#else
static const char *const relu_isa_names[RELU_ISA_COUNT] = {"none", "sse2", "avx2", "avx512"};
#endif

const char *
relu_isa_name(relu_isa isa)
{
    return (unsigned)isa < RELU_ISA_COUNT && relu_isa_names[isa] != NULL ? relu_isa_names[isa] : "?";
}

int
relu_isa_from_name(const char *name)
{
    for (int i = 0; i < RELU_ISA_COUNT; i++) {
        if (relu_isa_names[i] != NULL && strcmp(name, relu_isa_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* The best streaming-store path this CPU runs. */
static relu_isa
relu_detect_isa(void)
{
#if RELU_HAVE_NT && defined(__aarch64__)
    return RELU_ISA_STNP; /* part of the base A64 instruction set */
#elif RELU_HAVE_NT
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

static const char *const relu_vendor_names[] = {"other", "intel", "amd"};

const char *
relu_vendor_name(relu_vendor vendor)
{
    return (unsigned)vendor <= RELU_VENDOR_AMD ? relu_vendor_names[vendor] : "?";
}

relu_vendor
relu_vendor_from_cpuid(const char *vendor_id)
{
    if (vendor_id == NULL) {
        return RELU_VENDOR_OTHER;
    }
    if (strcmp(vendor_id, "GenuineIntel") == 0) {
        return RELU_VENDOR_INTEL;
    }
    /* Hygon's Dhyana is a licensed Zen: the same cache design. */
    if (strcmp(vendor_id, "AuthenticAMD") == 0 || strcmp(vendor_id, "HygonGenuine") == 0) {
        return RELU_VENDOR_AMD;
    }
    return RELU_VENDOR_OTHER;
}

relu_vendor
relu_detect_vendor(void)
{
#if RELU_HAVE_NT && defined(__x86_64__)
    unsigned int max_leaf = 0, ebx = 0, ecx = 0, edx = 0;
    __cpuid(0, max_leaf, ebx, ecx, edx);
    char vendor_id[13];
    memcpy(vendor_id, &ebx, 4);
    memcpy(vendor_id + 4, &edx, 4);
    memcpy(vendor_id + 8, &ecx, 4);
    vendor_id[12] = 0;
    return relu_vendor_from_cpuid(vendor_id);
#else
    return RELU_VENDOR_OTHER; /* aarch64 too: its rule is the "other" one (see below) */
#endif
}

/*
 * The text of a small sysfs file, whitespace at its end removed, into text; 0 if it is missing,
 * empty or longer than the buffer.
 */
static int
relu_read_sysfs_text(const char *path, char *text, size_t size)
{
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        return 0;
    }
    const size_t got = fread(text, 1, size - 1, file);
    const int too_long = got == size - 1 && fgetc(file) != EOF;
    fclose(file);
    size_t length = got;
    while (length > 0 && (text[length - 1] == '\n' || text[length - 1] == ' ' ||
                          text[length - 1] == '\t' || text[length - 1] == '\r')) {
        length--;
    }
    text[length] = 0;
    return length > 0 && !too_long;
}

/* The decimal number at *text, which moves past it; 0 (and *text unmoved) if there are no
 * digits or the number exceeds `limit` (garbled). */
static int
relu_parse_decimal(const char **text, ptrdiff_t limit, ptrdiff_t *value)
{
    const char *c = *text;
    ptrdiff_t number = 0;
    for (; *c >= '0' && *c <= '9'; c++) {
        if (number > (limit - (*c - '0')) / 10) {
            return 0;
        }
        number = number * 10 + (*c - '0');
    }
    if (c == *text) {
        return 0;
    }
    *text = c;
    *value = number;
    return 1;
}

/* A sysfs number ("2048K", "32M", "3"): bytes (or the plain number); 0 if garbled. */
static ptrdiff_t
relu_parse_sysfs_size(const char *text)
{
    ptrdiff_t value = 0;
    const char *c = text;
    if (!relu_parse_decimal(&c, PTRDIFF_MAX >> 30, &value)) {
        return 0; /* no number, or absurdly large */
    }
    int shift = 0;
    if (*c == 'K' || *c == 'k') {
        shift = 10, c++;
    }
    else if (*c == 'M' || *c == 'm') {
        shift = 20, c++;
    }
    else if (*c == 'G' || *c == 'g') {
        shift = 30, c++;
    }
    return *c == 0 ? value << shift : 0;
}

/* CPUs in a sysfs CPU list ("0-1", "0,2-5,8"); 0 if garbled. */
static ptrdiff_t
relu_parse_sysfs_cpu_count(const char *text)
{
    ptrdiff_t count = 0;
    const char *c = text;
    enum { RELU_MAX_CPU_NUMBER = 1 << 20 };
    while (*c) {
        ptrdiff_t first, last;
        if (!relu_parse_decimal(&c, RELU_MAX_CPU_NUMBER, &first)) {
            return 0;
        }
        last = first;
        if (*c == '-') {
            c++;
            if (!relu_parse_decimal(&c, RELU_MAX_CPU_NUMBER, &last) || last < first) {
                return 0;
            }
        }
        count += last - first + 1;
        if (count > RELU_MAX_CPU_NUMBER) {
            return 0; /* more CPUs than any machine has: garbled */
        }
        if (*c == ',') {
            c++;
        }
        else if (*c != 0) {
            return 0;
        }
    }
    return count;
}

/* The small sysfs file at `path` read by `parse` (one of the two above); 0 if it is missing,
 * empty, longer than any such file, or garbled. */
static ptrdiff_t
relu_read_sysfs(const char *path, ptrdiff_t (*parse)(const char *text))
{
    char text[1024];
    return relu_read_sysfs_text(path, text, sizeof text) ? parse(text) : 0;
}

/* <root>/devices/system/cpu/cpu0/cache/index<index>/<name> into path; 0 if it does not fit. */
static int
relu_sysfs_cache_path(char *path, size_t size, const char *root, int index, const char *name)
{
    const int length = snprintf(path, size, "%s/devices/system/cpu/cpu0/cache/index%d/%s", root,
                                index, name);
    return length > 0 && (size_t)length < size;
}

/*
 * The data/unified caches of cpu0 under `sysfs_root`: sets the level-2 size and the size of the
 * highest level. A file that is missing or garbled (not "<digits>[K|M|G]") leaves its cache out.
 * Returns 1 and sets source to "sysfs" if a size was found, else 0 with both sizes 0.
 */
static int
relu_caches_from_sysfs(const char *sysfs_root, relu_caches *caches)
{
    caches->l2_bytes = 0;
    caches->llc_bytes = 0;
    caches->llc_shared_cpus = 0;
    int llc_level = 0;
    /* Indexes are numbered from 0 without gaps; a missing "level" ends the list. */
    for (int index = 0; index < 16; index++) {
        char path[4096], type[32];
        if (!relu_sysfs_cache_path(path, sizeof path, sysfs_root, index, "level")) {
            break;
        }
        const ptrdiff_t level = relu_read_sysfs(path, relu_parse_sysfs_size);
        if (level <= 0) {
            break;
        }
        /* "type", "size" and "shared_cpu_list" paths are no longer than a "level" that fit. */
        relu_sysfs_cache_path(path, sizeof path, sysfs_root, index, "type");
        if (!relu_read_sysfs_text(path, type, sizeof type) ||
            (strcmp(type, "Data") != 0 && strcmp(type, "Unified") != 0)) {
            continue; /* instruction caches, and caches whose type is unknown */
        }
        relu_sysfs_cache_path(path, sizeof path, sysfs_root, index, "size");
        const ptrdiff_t size = relu_read_sysfs(path, relu_parse_sysfs_size);
        if (size <= 0) {
            continue;
        }
        if (level == 2) {
            caches->l2_bytes = size;
        }
        /* The last level is level 2 or above: an L1 alone (a garbled tree) says nothing of it. */
        if (level >= 2 && level >= llc_level) {
            llc_level = (int)level;
            caches->llc_bytes = size;
            relu_sysfs_cache_path(path, sizeof path, sysfs_root, index, "shared_cpu_list");
            caches->llc_shared_cpus = (int)relu_read_sysfs(path, relu_parse_sysfs_cpu_count);
        }
    }
    const int found = caches->l2_bytes > 0 || caches->llc_bytes > 0;
    if (found) {
        caches->source = "sysfs";
    }
    return found;
}

relu_caches
relu_read_caches(const char *sysfs_root, long sysconf_l2, long sysconf_l3)
{
    relu_caches caches = {0, 0, 0, "default"};
    relu_caches_from_sysfs(sysfs_root, &caches);
    if (caches.l2_bytes <= 0 && sysconf_l2 > 0) {
        caches.l2_bytes = (ptrdiff_t)sysconf_l2;
    }
    if (caches.llc_bytes <= 0) {
        if (sysconf_l3 > 0) {
            caches.llc_bytes = (ptrdiff_t)sysconf_l3;
            caches.source = "sysconf";
        }
        else if (sysconf_l2 > 0) {
            caches.llc_bytes = (ptrdiff_t)sysconf_l2;
            caches.source = "sysconf";
        }
    }
    if (caches.l2_bytes <= 0) {
        caches.l2_bytes = RELU_DEFAULT_L2_BYTES;
    }
    if (caches.llc_bytes <= 0) {
        caches.llc_bytes = RELU_DEFAULT_LLC_BYTES;
        caches.source = "default";
    }
    return caches;
}

relu_caches
relu_detect_caches(void)
{
    long l2_size = 0, l3_size = 0;
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    l2_size = sysconf(_SC_LEVEL2_CACHE_SIZE);
    l3_size = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return relu_read_caches("/sys", l2_size, l3_size);
}

/*
 * The output size from which relu_compute uses streaming stores (out of place only).
 *
 * Streaming stores pay once input and output no longer fit in the caches that give a core more
 * bandwidth than memory does: they skip the read-for-ownership of the output and leave the
 * cache to the input. Below that they lose (they bypass a cache that would have absorbed the
 * writes). Where the crossover falls depends on the cache design, so the rule is per vendor;
 * the measurements behind it are in BENCHMARKS.md ("The streaming-store rule, per vendor").
 *  - Intel: from the size of the L2. The mesh L3 gives one core about what memory gives it, so
 *    streaming wins as soon as the data leaves the L2.
 *  - AMD (and unknown vendors, as the better-tested guess): from half the last-level cache as
 *    one core sees it (its core complex's L3; never glibc's sysconf figure, which is the whole
 *    package's), i.e. where input and output together fill that L3: 16 MiB on both EPYCs
 *    measured (32 MiB L3). Regular stores win well inside the L3 and lose from there on.
 * ONNX_RELU_NT_THRESHOLD overrides it (the Python package reads it at import); `onnx-relu bench
 * --scan` measures the crossover of the machine it runs on and prints that setting.
 */
ptrdiff_t
relu_default_nt_bytes(const relu_caches *caches, relu_vendor vendor)
{
    if (vendor == RELU_VENDOR_INTEL) {
        return caches->l2_bytes > 0 ? caches->l2_bytes : RELU_DEFAULT_L2_BYTES;
    }
    const ptrdiff_t llc = caches->llc_bytes > 0 ? caches->llc_bytes : RELU_DEFAULT_LLC_BYTES;
    return llc / 2;
}

/*
 * How many 4 KiB pages the streaming-store loop walks side by side (relu_kernel.c's
 * RELU_DEFINE_NT_ISA), by vendor; the measurements behind it are in BENCHMARKS.md ("Streaming
 * stores: one stream or four, per vendor").
 *  - Intel: four. Several streams a page apart keep more reads in flight than one.
 *  - AMD: one. Its prefetchers follow one sequential stream best: four side by side ran at about
 *    0.7 of one on the EPYC measured, one thread or two.
 *  - Other vendors (arm64 included): four, the layout measured first.
 * set_kernel_tuning(nt_streams=...) overrides it.
 */
ptrdiff_t
relu_default_nt_streams(relu_vendor vendor)
{
    return vendor == RELU_VENDOR_AMD ? 1 : RELU_DEFAULT_NT_STREAMS;
}

relu_thresholds
relu_default_thresholds(const relu_caches *caches, relu_vendor vendor)
{
    relu_thresholds defaults = {
        .parallel_bytes = RELU_DEFAULT_PARALLEL_BYTES,
        .min_part_bytes = RELU_DEFAULT_MIN_PART_BYTES,
        .nt_bytes = relu_default_nt_bytes(caches, vendor),
        .spin_ns = RELU_DEFAULT_SPIN_NS,
        .nt_streams = relu_default_nt_streams(vendor),
    };
    return defaults;
}

void
relu_tuning_init(void)
{
    relu_best_isa = relu_detect_isa();
    RELU_STORE(relu_tuning.nt_isa, (int)relu_best_isa);
    relu_found_caches = relu_detect_caches();
    relu_found_vendor = relu_detect_vendor();
    relu_set_thresholds(relu_default_thresholds(&relu_found_caches, relu_found_vendor));
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
    return RELU_EXCHANGE(relu_tuning.num_threads, count); /* concurrent setters: each gets its own */
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
#define RELU_SET_IF_GIVEN(python_name, field)                                                  \
    relu_set_if_given(&relu_tuning.field, thresholds.field);
    RELU_FOR_EACH_SIZE_SETTING(RELU_SET_IF_GIVEN)
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
#define RELU_LOAD_SETTING(python_name, field) .field = RELU_LOAD(relu_tuning.field),
        .thresholds = {RELU_FOR_EACH_SIZE_SETTING(RELU_LOAD_SETTING)},
        .defaults = relu_default_thresholds(&relu_found_caches, relu_found_vendor),
        .nt_isa = (relu_isa)RELU_LOAD(relu_tuning.nt_isa),
        .best_nt_isa = relu_best_isa,
        .caches = relu_found_caches,
        .vendor = relu_found_vendor,
    };
    return report;
}
