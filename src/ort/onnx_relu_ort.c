/*
 * onnx_relu_ort.c - an onnxruntime custom-op library: the standard-domain ("") Relu operator for
 * its eight types (float16, float, double, bfloat16, int8, int16, int32, int64), computed by the
 * onnx-relu kernel (src/kernel: the same element rule, streaming stores and thread pool as
 * onnx_relu.relu).
 *
 * Load it with onnxruntime's SessionOptions.register_custom_ops_library(path) (Python) or
 * RegisterCustomOpsLibrary (C): onnxruntime calls RegisterCustomOps below, which adds one custom
 * op domain "" holding a Relu op per type. A custom op with the name and domain of a built-in one
 * takes its place in every session made with those options, at every opset.
 *
 * Why all eight types: onnxruntime merges the ops of one name into one schema whose type
 * constraint is the union of their types, so registering fewer types would make models of the
 * others invalid. The merged schema replaces ONNX's type rules per Relu version (e.g. int8 before
 * opset 14): callers check the model first (onnx_relu.ort_session does).
 *
 * The library needs no link to onnxruntime: the function table comes with RegisterCustomOps. It
 * asks for API version 16 (onnxruntime >= 1.16), the first whose custom ops can return an error
 * from a kernel (KernelComputeV2); every function it calls exists since API version 1.
 */
#include <pthread.h>
#include <sched.h>
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
} relu_ort_op;

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
        relu_compute(record->type, in, out, (ptrdiff_t)count, size, size);
    }
done:
    if (dims != stack_dims) {
        free(dims);
    }
    api->ReleaseTensorTypeAndShapeInfo(info);
    return status;
}

#define RELU_ORT_OP(name, int_t, threshold)                                                    \
    {.op = {.version = ORT_ABI_VERSION,                                                        \
            .CreateKernel = NULL, /* CreateKernelV2 is used (version >= 16) */                 \
            .GetName = relu_ort_get_name,                                                      \
            .GetExecutionProviderType = relu_ort_provider,                                     \
            .GetInputType = relu_ort_type,                                                     \
            .GetInputTypeCount = relu_ort_one,                                                 \
            .GetOutputType = relu_ort_type,                                                    \
            .GetOutputTypeCount = relu_ort_one,                                                \
            .KernelCompute = NULL, /* KernelComputeV2 is used (version >= 16) */               \
            .KernelDestroy = relu_ort_destroy_kernel,                                          \
            .GetInputCharacteristic = relu_ort_required,                                       \
            .GetOutputCharacteristic = relu_ort_required,                                      \
            .GetInputMemoryType = relu_ort_default_memory,                                     \
            .GetVariadicInputMinArity = relu_ort_variadic_arity,                               \
            .GetVariadicInputHomogeneity = relu_ort_variadic_arity,                            \
            .GetVariadicOutputMinArity = relu_ort_variadic_arity,                              \
            .GetVariadicOutputHomogeneity = relu_ort_variadic_arity,                           \
            .CreateKernelV2 = relu_ort_create_kernel,                                          \
            .KernelComputeV2 = relu_ort_compute},                                              \
     .type = RELU_TYPE_##name,                                                                 \
     .element_type = ONNX_ELEMENT_##name,                                                      \
     .type_name = #name},

static relu_ort_op relu_ort_ops[RELU_TYPE_COUNT] = {RELU_FOR_EACH_TYPE(RELU_ORT_OP)};

/* One domain for the whole process, added to every SessionOptions that loads the library: a
 * domain must outlive every session made with it, and the library cannot know when that is. */
static OrtCustomOpDomain *relu_ort_domain;
static OrtStatus *relu_ort_domain_error;
static pthread_once_t relu_ort_domain_once = PTHREAD_ONCE_INIT;
/* The kernel's own set-up (tuning from this machine, fork handler, thread count), done once,
 * by the first registration or the first setter call below, whichever comes first. */
static int relu_ort_kernel_error;
static pthread_once_t relu_ort_kernel_once = PTHREAD_ONCE_INIT;

static int
relu_ort_available_cpus(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1) {
            return n < RELU_MAX_THREADS ? n : RELU_MAX_THREADS;
        }
    }
#endif
    return 1;
}

static void
relu_ort_kernel_init_once(void)
{
    if (relu_kernel_init() != 0) {
        relu_ort_kernel_error = 1;
        return;
    }
    relu_set_num_threads(relu_ort_available_cpus());
}

static void
relu_ort_domain_init_once(void)
{
    const OrtApi *api = relu_ort_api;
    OrtStatus *status = api->CreateCustomOpDomain("", &relu_ort_domain);
    for (int i = 0; status == NULL && i < RELU_TYPE_COUNT; i++) {
        status = api->CustomOpDomain_Add(relu_ort_domain, &relu_ort_ops[i].op);
    }
    relu_ort_domain_error = status; /* kept: every later registration reports it */
}

ONNX_RELU_ORT_EXPORT OrtStatus *
RegisterCustomOps(OrtSessionOptions *options, const OrtApiBase *base)
{
    const OrtApi *api = base->GetApi(ORT_ABI_VERSION);
    if (api == NULL) {
        /* An onnxruntime older than 1.16: report it through the oldest table, which has
         * CreateStatus at the same place. */
        const OrtApi *oldest = base->GetApi(1);
        char message[200];
        snprintf(message, sizeof message,
                 "the onnx-relu custom-op library needs onnxruntime API version %u "
                 "(onnxruntime >= 1.16); this onnxruntime is %s",
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
                                 "onnx-relu custom-op library: creating the Relu domain failed");
    }
    /* Options carry a mark once the domain is on them: registering the library on the same
     * options again (through any path: SessionOptions.register_custom_ops_library,
     * onnx_relu.ort_session_options) adds nothing, where a second copy of the domain would make
     * onnxruntime refuse every session ("Domain already set in registry"). */
    int registered = 0;
    OrtStatus *status = api->HasSessionConfigEntry(options, RELU_ORT_REGISTERED_KEY, &registered);
    if (status != NULL || registered) {
        return status;
    }
    if ((status = api->AddCustomOpDomain(options, relu_ort_domain)) != NULL) {
        return status;
    }
    return api->AddSessionConfigEntry(options, RELU_ORT_REGISTERED_KEY, "1");
}

/* The kernel's thread count in this library (its own copy of the kernel: separate from the
 * NumPy module's). Returns the previous count, or -1 for a count outside 1..RELU_MAX_THREADS. */
ONNX_RELU_ORT_EXPORT int
onnx_relu_ort_set_num_threads(int count)
{
    pthread_once(&relu_ort_kernel_once, relu_ort_kernel_init_once);
    return relu_set_num_threads(count);
}

ONNX_RELU_ORT_EXPORT int
onnx_relu_ort_get_num_threads(void)
{
    pthread_once(&relu_ort_kernel_once, relu_ort_kernel_init_once);
    return relu_get_num_threads();
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
    relu_thresholds change = {.parallel_bytes = -1, .min_chunk_bytes = -1, .nt_bytes = -1,
                              .spin_ns = -1};
    if (bytes >= 0) {
        change.nt_bytes = (ptrdiff_t)bytes;
        relu_set_thresholds(change);
    }
    return previous;
}
