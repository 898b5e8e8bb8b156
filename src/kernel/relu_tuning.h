/*
 * relu_tuning.h - the kernel's process-wide tuning: thread count, the output sizes from which a
 * call uses threads and streaming stores, the streaming-store ISA, the pool's spin time, and the
 * cache sizes the streaming-store threshold is derived from.
 *
 * Every setting is an atomic, read (relaxed) by every call and written by the setters below,
 * which any thread may call at any time, with or without a lock: a call that races with a
 * setter sees the old or the new value of each setting, any combination of which is valid (each
 * setting only chooses between correct code paths). relu_set_num_threads returns the count it
 * replaced (an atomic exchange). A caller that needs several settings changed as one step, or
 * the previous values of several, serialises its own setters (the NumPy module has a lock).
 */
#ifndef RELU_TUNING_H
#define RELU_TUNING_H

#include <stddef.h>

#include "relu_platform.h"
#include "relu_types.h" /* RELU_FOR_EACH_SIZE_SETTING: the settings of relu_thresholds */

/* Most threads one call may use (the calling thread included). */
enum { RELU_MAX_THREADS = 256 };

/*
 * Streaming-store code paths, in order of preference; RELU_ISA_NONE means regular stores only.
 * The levels above NONE belong to the architecture built for: x86-64 has SSE2, AVX2 and AVX-512;
 * aarch64 has one, STNP (in the first slot), and its names are "none" and "stnp".
 */
typedef enum {
    RELU_ISA_NONE = 0,
    RELU_ISA_SSE2,
    RELU_ISA_AVX2,
    RELU_ISA_AVX512,
    RELU_ISA_COUNT,
    RELU_ISA_STNP = RELU_ISA_SSE2
} relu_isa;

/* "none", "sse2", "avx2", "avx512" on x86-64; "none", "stnp" on aarch64. */
RELU_API const char *relu_isa_name(relu_isa isa);
/* The ISA of that name, or -1 if there is none. */
RELU_API int relu_isa_from_name(const char *name);

/* Cache sizes in bytes (0: not found) and where they came from: "sysfs", "sysconf", "default". */
typedef struct {
    ptrdiff_t l2_bytes;
    ptrdiff_t llc_bytes;  /* the last-level data/unified cache, as one CPU sees it */
    int llc_shared_cpus;  /* CPUs sharing that cache (sysfs shared_cpu_list); 0 if not known */
    const char *source;   /* of llc_bytes (the size the streaming rule depends on most) */
} relu_caches;

/*
 * The caches from the per-CPU view first: sysfs under `sysfs_root` (normally "/sys"; another root
 * reads a recorded copy of such a tree: <root>/devices/system/cpu/cpu0/cache/index<i>/{level,
 * type,size,shared_cpu_list}, where a file that is missing or garbled leaves its cache out); then
 * the C library's figures (`sysconf_l2`, `sysconf_l3`: what sysconf(_SC_LEVEL2/3_CACHE_SIZE)
 * says, <= 0 for nothing) for a size sysfs lacks; then defaults (1 MiB L2, 32 MiB last level).
 * sysconf comes last because glibc reports the whole package's L3 on some CPUs (320 MiB on an
 * AMD EPYC whose cores each see a 32 MiB L3; BENCHMARKS.md, "Caches as one core sees them").
 * Pure: reads only the files under `sysfs_root`, so tests feed it recorded trees.
 */
RELU_API relu_caches relu_read_caches(const char *sysfs_root, long sysconf_l2, long sysconf_l3);

/* This machine's caches: relu_read_caches("/sys", sysconf(L2), sysconf(L3)). */
RELU_API relu_caches relu_detect_caches(void);

/* CPU vendors whose caches call for different streaming-store thresholds. */
typedef enum { RELU_VENDOR_OTHER = 0, RELU_VENDOR_INTEL, RELU_VENDOR_AMD } relu_vendor;

/* "other", "intel", "amd". */
RELU_API const char *relu_vendor_name(relu_vendor vendor);
/* The vendor of a CPUID vendor string ("GenuineIntel", "AuthenticAMD", "HygonGenuine"). */
RELU_API relu_vendor relu_vendor_from_cpuid(const char *vendor_id);
/* This CPU's vendor: relu_vendor_from_cpuid of its CPUID leaf 0 (OTHER off x86-64). */
RELU_API relu_vendor relu_detect_vendor(void);

/* The output size from which relu_compute uses streaming stores (out of place), for these
 * caches and vendor: the measured rule of relu_tuning.c. Pure. */
RELU_API ptrdiff_t relu_default_nt_bytes(const relu_caches *caches, relu_vendor vendor);
/* The pages the streaming-store loop walks side by side (nt_streams) for this vendor: the
 * measured rule of relu_tuning.c. Pure. */
RELU_API ptrdiff_t relu_default_nt_streams(relu_vendor vendor);

/* Detects the best ISA, the caches and the vendor, and sets the ISA and streaming-store
 * threshold from them (relu_kernel_init calls it). */
RELU_API void relu_tuning_init(void);

/* Setters (and the thread count's getter). Sizes are output bytes; a threshold of 0 means every
 * call. */
RELU_API int relu_get_num_threads(void);
/* Threads a large call may use, 1..RELU_MAX_THREADS; returns the previous count, or -1 (and
 * changes nothing) for a count outside that range. */
RELU_API int relu_set_num_threads(int count);

/*
 * The thresholds and the spin time, one field per RELU_FOR_EACH_SIZE_SETTING entry, in its order
 * (what each is: src/onnx_relu/_spec.py): parallel_bytes (from this output size a call is shared
 * with the thread pool), min_part_bytes (smallest part a call is cut into for the pool's
 * threads), nt_bytes (from this output size an out-of-place call streams its stores), spin_ns
 * (how long the pool's threads spin for the next call, then sleep), nt_streams (how many 4 KiB
 * pages the streaming-store loop walks side by side; 0 and 1: one sequential stream). A negative
 * field leaves that setting as it is.
 */
#define RELU_THRESHOLD_FIELD(python_name, field) ptrdiff_t field;
typedef struct {
    RELU_FOR_EACH_SIZE_SETTING(RELU_THRESHOLD_FIELD)
} relu_thresholds;

RELU_API void relu_set_thresholds(relu_thresholds thresholds);
/* The streaming-store code path; returns -1 (and changes nothing) for one this CPU lacks. */
RELU_API int relu_set_nt_isa(relu_isa isa);

/* Every setting's default for these caches and vendor (the measured rules of relu_tuning.c):
 * what relu_tuning_init sets. Pure. */
RELU_API relu_thresholds relu_default_thresholds(const relu_caches *caches, relu_vendor vendor);

/* Everything at one moment, for reports (onnx_relu._relu._tuning()). */
typedef struct {
    int num_threads;
    int threads_supported; /* 0: a build without the thread pool, every call is serial */
    relu_thresholds thresholds;
    relu_thresholds defaults; /* relu_default_thresholds of this machine */
    relu_isa nt_isa;
    relu_isa best_nt_isa;
    relu_caches caches;
    relu_vendor vendor;
} relu_tuning_report;

RELU_API relu_tuning_report relu_get_tuning(void);

/*
 * The settings themselves (kernel-internal: the kernel and the pool read them on every call, so
 * they are variables rather than calls to the getters; callers use the functions above).
 */
typedef struct {
#define RELU_SETTING_ATOMIC(python_name, field) RELU_ATOMIC(ptrdiff_t) field;
    RELU_ATOMIC(int) num_threads;
    RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_ATOMIC)
    RELU_ATOMIC(int) nt_isa; /* a relu_isa */
} relu_settings;

extern RELU_API relu_settings relu_tuning;

#endif /* RELU_TUNING_H */
