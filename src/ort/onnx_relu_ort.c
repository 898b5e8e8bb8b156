/*
 * onnx_relu_ort.c - an onnxruntime custom-op library: the ONNX Relu operator for its eight types
 * (float16, float, double, bfloat16, int8, int16, int32, int64), computed by the onnx-relu
 * kernel (src/kernel: the same element rule and streaming stores as onnx_relu.relu), on the
 * session's own intra-op thread pool.
 *
 * Load it with onnxruntime's SessionOptions.register_custom_ops_library(path) (Python) or
 * RegisterCustomOpsLibrary (C): onnxruntime calls RegisterCustomOps below, which adds
 *  - the domain "onnx_relu" (opset 1): a Relu of all eight types. A node of that domain is
 *    always this library's Relu: onnxruntime fuses it with nothing, so its values are
 *    onnx-relu's (-0.0 -> +0.0, NaN bits kept);
 *  - unless the session config entry "onnx_relu.ort_library.domains" is "onnx_relu", the
 *    standard domain "" with Relu from opset 14 on (Relu-14: all eight types). onnxruntime makes
 *    one schema per op name, from the first op's opset on (custom_ops.cc), so the ops begin at
 *    14: below it ONNX's own Relu-1/6/13 schemas stay in force and onnxruntime itself refuses a
 *    type they do not allow (int8 at opset 13, bfloat16 at 12). There its own kernels run the
 *    Relu (its kernel lookup does not match a custom kernel against ONNX's schema).
 *    A custom op with the name and domain of a built-in one takes its place, but onnxruntime
 *    still fuses a standard Relu into the Conv or Gemm before it (then it computes the Relu).
 *
 * onnx_relu.ort_session registers only the "onnx_relu" domain and points the chosen Relu nodes
 * at it: every Relu (exact=True), or those onnxruntime's CPU provider cannot run (bfloat16,
 * int16, int64, opsets 1-5), leaving the rest, with their fusions, to onnxruntime. See
 * docs/onnx-integration.md.
 *
 * Threads: a large Relu is cut into parts that onnxruntime's intra-op pool runs
 * (KernelContext_ParallelFor), so the library uses the threads the session was given
 * (SessionOptions.intra_op_num_threads) and keeps no pool of its own; onnx_relu_ort_set_num_threads
 * switches to the kernel's own pool of a fixed size instead (for comparisons).
 *
 * The library needs no link to onnxruntime: the function table comes with RegisterCustomOps. It
 * asks for API version 17 (onnxruntime >= 1.17), the first with opset ranges for custom ops and
 * KernelContext_ParallelFor.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ort_abi.h"
#include "relu_glibc_compat.h" /* pthread_once at its oldest glibc version (manylinux) */
#include "relu_kernel.h"
#include "relu_tuning.h"

#if defined(__GNUC__) || defined(__clang__)
#define ONNX_RELU_ORT_EXPORT __attribute__((visibility("default")))
#else
#define ONNX_RELU_ORT_EXPORT
#endif

/* ONNX_ELEMENT_<kernel type name>: its ONNX element type (generated from the one table). */
#include "relu_ort_types.h"

/* One registered op: onnxruntime's callback struct first, so a callback's `op` argument is the
 * whole record. */
typedef struct {
    OrtCustomOp op;
    relu_type type;
    ort_abi_element_type element_type;
    const char *type_name;
    int start_version, end_version; /* the opsets of its domain it holds for */
} relu_ort_op;

/* The standard domain's ops: X(since opset, last opset, types), types as bits of relu_type.
 * Relu-14 only (see the top of the file: an earlier range could not be served by these ops). */
#define RELU_ORT_BIT(name) (1u << RELU_TYPE_##name)
#define RELU_ORT_ALL ((1u << RELU_TYPE_COUNT) - 1u)
#define RELU_ORT_LAST_OPSET 0x7fffffff /* "and every later opset" */
#define RELU_ORT_VERSIONS(X) X(14, RELU_ORT_LAST_OPSET, RELU_ORT_ALL)

/* The library's own domain: a node of it is always this library's Relu (all eight types). */
#define RELU_ORT_DOMAIN "onnx_relu"
#define RELU_ORT_DOMAIN_OPSET 1

/* The session config entry that chooses the domains registered, and its two values. */
#define RELU_ORT_MODE_KEY "onnx_relu.ort_library.domains"
#define RELU_ORT_MODE_BOTH "standard+onnx_relu"
#define RELU_ORT_MODE_OWN_DOMAIN_ONLY "onnx_relu"

/* The session config entry that marks options holding the library's domain (see
 * RegisterCustomOps); onnx_relu.onnx.ort_library reads it too. */
#define RELU_ORT_REGISTERED_KEY "onnx_relu.ort_library.registered"

/* The API table of the onnxruntime that loaded the library (one per process), set by the first
 * registration; atomic because sessions may register the library from several threads at once
 * (a plain read of it is an atomic load). */
static _Atomic(const OrtApi *) relu_ort_api;

static const char *
relu_ort_get_name(const OrtCustomOp *op)
{
    (void)op;
    return "Relu";
}

static const char *
relu_ort_provider(const OrtCustomOp *op)
{
    (void)op;
    return NULL; /* the CPU execution provider */
}

static ort_abi_element_type
relu_ort_type(const OrtCustomOp *op, size_t index)
{
    (void)index;
    return ((const relu_ort_op *)op)->element_type;
}

static int
relu_ort_start_version(const OrtCustomOp *op)
{
    return ((const relu_ort_op *)op)->start_version;
}

static int
relu_ort_end_version(const OrtCustomOp *op)
{
    return ((const relu_ort_op *)op)->end_version;
}

/* The output has the input's type and shape, each dimension as the input has it: a number, a
 * symbolic name, or unknown. onnxruntime's API writes a dimension without a name as the number
 * -1, which onnxruntime then takes for a size (it warns on every run, and a MatMul downstream
 * fails its inference), so an unknown dimension gets a name of its own, used nowhere else. An
 * input without dimensions may be a scalar or of unknown rank (the API does not tell them
 * apart): the output's shape is then left unknown, and onnxruntime takes its type from the op's
 * one output type. */
enum { RELU_ORT_MAX_NAMED_RANK = 64 };
static _Atomic unsigned long long relu_ort_unknown_dims;

static OrtStatus *
relu_ort_infer_shape(const OrtCustomOp *op, OrtShapeInferContext *context)
{
    (void)op;
    const OrtApi *api = relu_ort_api;
    OrtTensorTypeAndShapeInfo *info = NULL; /* the context's own: not released here */
    OrtStatus *status = api->ShapeInferContext_GetInputTypeShape(context, 0, &info);
    size_t rank = 0;
    if (status == NULL) {
        status = api->GetDimensionsCount(info, &rank);
    }
    if (status != NULL || rank == 0) {
        return status;
    }
    if (rank > RELU_ORT_MAX_NAMED_RANK) {
        return NULL; /* (no such model) the shape left unknown rather than guessed */
    }
    int64_t dims[RELU_ORT_MAX_NAMED_RANK];
    const char *names[RELU_ORT_MAX_NAMED_RANK];
    char made[RELU_ORT_MAX_NAMED_RANK][40];
    if ((status = api->GetDimensions(info, dims, rank)) != NULL ||
        (status = api->GetSymbolicDimensions(info, names, rank)) != NULL) {
        return status;
    }
    int renamed = 0;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0 && (names[i] == NULL || names[i][0] == '\0')) {
            unsigned long long n = ++relu_ort_unknown_dims;
            snprintf(made[i], sizeof made[i], "onnx_relu_unknown_%llu", n);
            names[i] = made[i];
            renamed = 1;
        }
    }
    if (renamed && (status = api->SetSymbolicDimensions(info, names, rank)) != NULL) {
        return status;
    }
    return api->ShapeInferContext_SetOutputTypeShape(context, 0, info);
}

static size_t
relu_ort_one(const OrtCustomOp *op)
{
    (void)op;
    return 1;
}

static int
relu_ort_required(const OrtCustomOp *op, size_t index)
{
    (void)op;
    (void)index;
    return ORT_ABI_REQUIRED;
}

static int
relu_ort_default_memory(const OrtCustomOp *op, size_t index)
{
    (void)op;
    (void)index;
    return ORT_ABI_DEFAULT_MEMORY;
}

static int
relu_ort_variadic_arity(const OrtCustomOp *op)
{
    (void)op;
    return 1; /* never read: Relu has no variadic input or output */
}

/* The kernel object is the op record itself: Relu has no attributes or state to keep. */
static OrtStatus *
relu_ort_create_kernel(const OrtCustomOp *op, const OrtApi *api, const OrtKernelInfo *info,
                       void **kernel)
{
    (void)api;
    (void)info;
    *kernel = (void *)op;
    return NULL;
}

static void
relu_ort_destroy_kernel(void *kernel)
{
    (void)kernel; /* nothing was allocated for it */
}

/* Up to this many dimensions are read into the stack; a tensor of higher rank (ONNX sets no
 * limit) has its dimensions read into an allocated array. */
enum { RELU_ORT_STACK_DIMS = 16 };

/* Threads the kernel's own pool uses instead of the session's (0: the session's pool). */
static RELU_ATOMIC(int) relu_ort_own_threads;

/* Most parts one call is split into on the session's pool: onnxruntime shares them out among
 * however many threads the session has (the kernel cuts no part under its smallest size). */
enum { RELU_ORT_POOL_THREADS = 64 };

/* relu_runner.parallel_for on onnxruntime's intra-op pool: part k of the call is fn(call, k). */
static int
relu_ort_parallel_for(void *context, void (*part)(void *call, size_t k), void *call, size_t parts)
{
    OrtStatus *status =
        relu_ort_api->KernelContext_ParallelFor((const OrtKernelContext *)context, part, parts, 0, call);
    if (status != NULL) {
        relu_ort_api->ReleaseStatus(status);
        return 0; /* nothing ran: the kernel computes the call itself */
    }
    return 1;
}

static OrtStatus *
relu_ort_compute(void *kernel, OrtKernelContext *context)
{
    const relu_ort_op *record = (const relu_ort_op *)kernel;
    const OrtApi *api = relu_ort_api;
    const OrtValue *input = NULL;
    OrtValue *output = NULL;
    OrtTensorTypeAndShapeInfo *info = NULL;
    ort_abi_element_type element_type = ORT_ABI_UNDEFINED;
    int64_t stack_dims[RELU_ORT_STACK_DIMS];
    int64_t *dims = stack_dims;
    size_t rank = 0, count = 0;
    void *in = NULL, *out = NULL;
    OrtStatus *status;
    char message[256];

    if ((status = api->KernelContext_GetInput(context, 0, &input)) != NULL) {
        return status;
    }
    if (input == NULL) {
        return api->CreateStatus(ORT_ABI_INVALID_ARGUMENT, "onnx-relu Relu: the input is missing");
    }
    if ((status = api->GetTensorTypeAndShape(input, &info)) != NULL) {
        return status;
    }
    if ((status = api->GetTensorElementType(info, &element_type)) != NULL ||
        (status = api->GetDimensionsCount(info, &rank)) != NULL) {
        goto done;
    }
    if (element_type != record->element_type) {
        snprintf(message, sizeof message,
                 "onnx-relu Relu (%s kernel): the input has ONNX element type %d, not %d",
                 record->type_name, (int)element_type, (int)record->element_type);
        status = api->CreateStatus(ORT_ABI_INVALID_ARGUMENT, message);
        goto done;
    }
    if (rank > RELU_ORT_STACK_DIMS) {
        dims = rank <= SIZE_MAX / sizeof *dims ? malloc(rank * sizeof *dims) : NULL;
        if (dims == NULL) {
            snprintf(message, sizeof message,
                     "onnx-relu Relu: no memory for the %zu dimensions of the input", rank);
            status = api->CreateStatus(ORT_ABI_RUNTIME_EXCEPTION, message);
            goto done;
        }
    }
    if ((status = api->GetDimensions(info, dims, rank)) != NULL ||
        (status = api->GetTensorShapeElementCount(info, &count)) != NULL ||
        (status = api->KernelContext_GetOutput(context, 0, dims, rank, &output)) != NULL) {
        goto done;
    }
    if (count > 0) {
        if ((status = api->GetTensorMutableData((OrtValue *)input, &in)) != NULL ||
            (status = api->GetTensorMutableData(output, &out)) != NULL) {
            goto done;
        }
        const ptrdiff_t size = (ptrdiff_t)relu_type_size(record->type);
        if (RELU_LOAD(relu_ort_own_threads) > 0) {
            relu_compute(record->type, in, out, (ptrdiff_t)count, size, size);
        }
        else {
            const relu_runner runner = {relu_ort_parallel_for, context, RELU_ORT_POOL_THREADS};
            relu_compute_on(&runner, record->type, in, out, (ptrdiff_t)count, size, size);
        }
    }
done:
    if (dims != stack_dims) {
        free(dims);
    }
    api->ReleaseTensorTypeAndShapeInfo(info);
    return status;
}

/* The callbacks every op shares; relu_ort_add_op fills in the rest. */
static const OrtCustomOp relu_ort_callbacks = {
    .version = ORT_ABI_VERSION,
    .CreateKernel = NULL, /* CreateKernelV2 is used (version >= 16) */
    .GetName = relu_ort_get_name,
    .GetExecutionProviderType = relu_ort_provider,
    .GetInputType = relu_ort_type,
    .GetInputTypeCount = relu_ort_one,
    .GetOutputType = relu_ort_type,
    .GetOutputTypeCount = relu_ort_one,
    .KernelCompute = NULL, /* KernelComputeV2 is used (version >= 16) */
    .KernelDestroy = relu_ort_destroy_kernel,
    .GetInputCharacteristic = relu_ort_required,
    .GetOutputCharacteristic = relu_ort_required,
    .GetInputMemoryType = relu_ort_default_memory,
    .GetVariadicInputMinArity = relu_ort_variadic_arity,
    .GetVariadicInputHomogeneity = relu_ort_variadic_arity,
    .GetVariadicOutputMinArity = relu_ort_variadic_arity,
    .GetVariadicOutputHomogeneity = relu_ort_variadic_arity,
    .CreateKernelV2 = relu_ort_create_kernel,
    .KernelComputeV2 = relu_ort_compute,
    .InferOutputShapeFn = relu_ort_infer_shape,
    .GetStartVersion = relu_ort_start_version,
    .GetEndVersion = relu_ort_end_version,
};

/* Each type's kernel enum, ONNX element type and name, by relu_type. */
#define RELU_ORT_TYPE_ENTRY(name, int_t, threshold) {RELU_TYPE_##name, ONNX_ELEMENT_##name, #name},
static const struct {
    relu_type type;
    ort_abi_element_type element_type;
    const char *name;
} relu_ort_types[RELU_TYPE_COUNT] = {RELU_FOR_EACH_TYPE(RELU_ORT_TYPE_ENTRY)};

/* Every op record: the standard domain's (one per version and type) and the own domain's. */
enum { RELU_ORT_MAX_OPS = 64 };
static relu_ort_op relu_ort_ops[RELU_ORT_MAX_OPS];
static int relu_ort_op_count;

/* Two domains for the whole process, added to every SessionOptions that loads the library: a
 * domain must outlive every session made with it, and the library cannot know when that is. */
static OrtCustomOpDomain *relu_ort_standard_domain, *relu_ort_own_domain;
static OrtStatus *relu_ort_domain_error;
static pthread_once_t relu_ort_domain_once = PTHREAD_ONCE_INIT;
/* The kernel's own set-up (tuning from this machine, fork handler), done once, by the first
 * registration or the first setter call below, whichever comes first. */
static int relu_ort_kernel_error;
static pthread_once_t relu_ort_kernel_once = PTHREAD_ONCE_INIT;

static void
relu_ort_kernel_init_once(void)
{
    if (relu_kernel_init() != 0) {
        relu_ort_kernel_error = 1;
    }
}

/* Adds to `domain` a Relu op for each type in `types`, holding for opsets since..last. */
static OrtStatus *
relu_ort_add_ops(OrtCustomOpDomain *domain, int since, int last, unsigned types)
{
    const OrtApi *api = relu_ort_api;
    OrtStatus *status = NULL;
    for (int i = 0; status == NULL && i < RELU_TYPE_COUNT; i++) {
        if (!(types & (1u << relu_ort_types[i].type))) {
            continue;
        }
        if (relu_ort_op_count >= RELU_ORT_MAX_OPS) {
            return api->CreateStatus(ORT_ABI_FAIL, "onnx-relu custom-op library: too many ops");
        }
        relu_ort_op *record = &relu_ort_ops[relu_ort_op_count++];
        record->op = relu_ort_callbacks;
        record->type = relu_ort_types[i].type;
        record->element_type = relu_ort_types[i].element_type;
        record->type_name = relu_ort_types[i].name;
        record->start_version = since;
        record->end_version = last;
        status = api->CustomOpDomain_Add(domain, &record->op);
    }
    return status;
}

static void
relu_ort_domain_init_once(void)
{
    const OrtApi *api = relu_ort_api;
    OrtStatus *status = api->CreateCustomOpDomain("", &relu_ort_standard_domain);
#define RELU_ORT_ADD_VERSION(since, last, types)                                               \
    if (status == NULL) {                                                                      \
        status = relu_ort_add_ops(relu_ort_standard_domain, since, last, types);               \
    }
    RELU_ORT_VERSIONS(RELU_ORT_ADD_VERSION)
#undef RELU_ORT_ADD_VERSION
    if (status == NULL) {
        status = api->CreateCustomOpDomain(RELU_ORT_DOMAIN, &relu_ort_own_domain);
    }
    if (status == NULL) {
        status = relu_ort_add_ops(relu_ort_own_domain, RELU_ORT_DOMAIN_OPSET, RELU_ORT_LAST_OPSET,
                                  RELU_ORT_ALL);
    }
    relu_ort_domain_error = status; /* kept: every later registration reports it */
}

/* Whether `options` ask for the own domain only (the standard Relu left to onnxruntime). */
static OrtStatus *
relu_ort_own_domain_only(const OrtApi *api, const OrtSessionOptions *options, int *only)
{
    int present = 0;
    *only = 0;
    OrtStatus *status = api->HasSessionConfigEntry(options, RELU_ORT_MODE_KEY, &present);
    if (status != NULL || !present) {
        return status;
    }
    char value[64];
    size_t size = sizeof value;
    if ((status = api->GetSessionConfigEntry(options, RELU_ORT_MODE_KEY, value, &size)) != NULL) {
        api->ReleaseStatus(status); /* longer than any value the library knows */
        value[0] = '\0';
    }
    if (strcmp(value, RELU_ORT_MODE_OWN_DOMAIN_ONLY) == 0) {
        *only = 1;
        return NULL;
    }
    if (strcmp(value, RELU_ORT_MODE_BOTH) == 0) {
        return NULL;
    }
    return api->CreateStatus(ORT_ABI_INVALID_ARGUMENT,
                             "onnx-relu custom-op library: the session config entry "
                             "'" RELU_ORT_MODE_KEY "' must be '" RELU_ORT_MODE_BOTH
                             "' (the default) or '" RELU_ORT_MODE_OWN_DOMAIN_ONLY "'");
}

ONNX_RELU_ORT_EXPORT OrtStatus *
RegisterCustomOps(OrtSessionOptions *options, const OrtApiBase *base)
{
    const OrtApi *api = base->GetApi(ORT_ABI_VERSION);
    if (api == NULL) {
        /* An onnxruntime older than 1.17: report it through the oldest table, which has
         * CreateStatus at the same place. */
        const OrtApi *oldest = base->GetApi(1);
        char message[200];
        snprintf(message, sizeof message,
                 "the onnx-relu custom-op library needs onnxruntime API version %u "
                 "(onnxruntime >= 1.17); this onnxruntime is %s",
                 ORT_ABI_VERSION, base->GetVersionString());
        return oldest != NULL ? oldest->CreateStatus(ORT_ABI_NOT_IMPLEMENTED, message) : NULL;
    }
    const OrtApi *unset = NULL; /* the first table stays: the same for every call in a process */
    atomic_compare_exchange_strong_explicit(&relu_ort_api, &unset, api, memory_order_acq_rel,
                                            memory_order_acquire);
    pthread_once(&relu_ort_kernel_once, relu_ort_kernel_init_once);
    if (relu_ort_kernel_error) {
        return api->CreateStatus(ORT_ABI_FAIL,
                                 "onnx-relu custom-op library: pthread_atfork failed");
    }
    pthread_once(&relu_ort_domain_once, relu_ort_domain_init_once);
    if (relu_ort_domain_error != NULL) {
        return api->CreateStatus(ORT_ABI_FAIL,
                                 "onnx-relu custom-op library: creating the Relu domains failed");
    }
    /* Options carry a mark once the domains are on them: registering the library on the same
     * options again (through any path: SessionOptions.register_custom_ops_library,
     * onnx_relu.ort_session_options) adds nothing, where a second copy of a domain would make
     * onnxruntime refuse every session ("Domain already set in registry"). */
    int registered = 0, only = 0;
    OrtStatus *status = api->HasSessionConfigEntry(options, RELU_ORT_REGISTERED_KEY, &registered);
    if (status != NULL || registered) {
        return status;
    }
    if ((status = relu_ort_own_domain_only(api, options, &only)) != NULL) {
        return status;
    }
    if (!only && (status = api->AddCustomOpDomain(options, relu_ort_standard_domain)) != NULL) {
        return status;
    }
    if ((status = api->AddCustomOpDomain(options, relu_ort_own_domain)) != NULL) {
        return status;
    }
    return api->AddSessionConfigEntry(options, RELU_ORT_REGISTERED_KEY, "1");
}

/* Threads for one large Relu: 0 (the default) runs its parts on the session's intra-op pool,
 * 1..RELU_MAX_THREADS on the kernel's own pool of that many threads instead (its own copy of the
 * kernel: separate from the NumPy module's). Returns the previous setting, or -1 for a count
 * outside 0..RELU_MAX_THREADS (nothing changed). */
ONNX_RELU_ORT_EXPORT int
onnx_relu_ort_set_num_threads(int count)
{
    pthread_once(&relu_ort_kernel_once, relu_ort_kernel_init_once);
    if (count < 0 || count > RELU_MAX_THREADS) {
        return -1;
    }
    if (count > 0) {
        relu_set_num_threads(count);
    }
    const int previous = RELU_LOAD(relu_ort_own_threads);
    RELU_STORE(relu_ort_own_threads, count);
    return previous;
}

ONNX_RELU_ORT_EXPORT int
onnx_relu_ort_get_num_threads(void)
{
    return RELU_LOAD(relu_ort_own_threads);
}

/* The output size in bytes from which the library's kernel streams its stores (out of place);
 * a negative size leaves it unchanged. Returns the previous size. The default comes from this
 * machine's caches, as in the NumPy module; onnx_relu.onnx.ort_library.
 * set_ort_library_nt_threshold documents it (and tests force it low to reach that path). */
ONNX_RELU_ORT_EXPORT long long
onnx_relu_ort_set_nt_threshold(long long bytes)
{
    pthread_once(&relu_ort_kernel_once, relu_ort_kernel_init_once);
    const long long previous = (long long)relu_get_tuning().thresholds.nt_bytes;
    /* Every setting left as it is (-1), whatever settings the table holds, but this one. */
#define RELU_ORT_LEAVE(python_name, field) .field = -1,
    relu_thresholds change = {RELU_FOR_EACH_SIZE_SETTING(RELU_ORT_LEAVE)};
    if (bytes >= 0) {
        change.nt_bytes = (ptrdiff_t)bytes;
        relu_set_thresholds(change);
    }
    return previous;
}
