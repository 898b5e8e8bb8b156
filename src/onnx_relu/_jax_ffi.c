/*
 * Relu as an XLA FFI handler on the CPU, for jax.jit, jax.vmap and jax.grad: the kernel of
 * onnx_relu._relu (_relu_kernel_entry.h) called on the buffers XLA hands over, with no Python
 * and no copy. Not built with the package: onnx_relu/_jax_ffi.py compiles it on first use
 * against the XLA FFI C API headers of the installed jaxlib (jax.ffi.include_dir()), and
 * relu falls back to jax.pure_callback where that cannot be done.
 */
#include <stddef.h>
#include <stdint.h>

#include "_relu_kernel_entry.h"
#include "xla/ffi/api/c_api.h"

#define RELU_FFI_EXPORT __attribute__((visibility("default")))

static const relu_kernel_entry *relu_ffi_kernel = NULL;

/* The kernel's code of each XLA element type Relu takes (-1: not taken), set by the init. */
enum { RELU_FFI_TYPES = 64 };
static int relu_ffi_codes[RELU_FFI_TYPES];

static XLA_FFI_Error *
relu_ffi_error(const XLA_FFI_Api *api, const char *message)
{
    XLA_FFI_Error_Create_Args args = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, message,
                                      XLA_FFI_Error_Code_INVALID_ARGUMENT};
    return api->XLA_FFI_Error_Create(&args);
}

/*
 * Takes the kernel (the pointer held by onnx_relu._relu._kernel_entry()'s capsule). Returns 0,
 * or -1 if its version is not the one this file was written for (then nothing is registered).
 */
RELU_FFI_EXPORT int
onnx_relu_jax_ffi_init(const relu_kernel_entry *kernel)
{
    if (kernel == NULL || kernel->version != RELU_KERNEL_ENTRY_VERSION) {
        return -1;
    }
    static const struct {
        XLA_FFI_DataType xla;
        const char *name;
    } names[] = {
        {XLA_FFI_DataType_S8, "int8"},       {XLA_FFI_DataType_S16, "int16"},
        {XLA_FFI_DataType_S32, "int32"},     {XLA_FFI_DataType_S64, "int64"},
        {XLA_FFI_DataType_F16, "float16"},   {XLA_FFI_DataType_BF16, "bfloat16"},
        {XLA_FFI_DataType_F32, "float32"},   {XLA_FFI_DataType_F64, "float64"},
    };
    for (int i = 0; i < RELU_FFI_TYPES; i++) {
        relu_ffi_codes[i] = -1;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if ((int)names[i].xla < 0 || (int)names[i].xla >= RELU_FFI_TYPES) {
            return -1;
        }
        relu_ffi_codes[names[i].xla] = kernel->type_code(names[i].name);
    }
    relu_ffi_kernel = kernel;
    return 0;
}

/* The handler: one array in, one array of its type and shape out (dense, row-major). */
RELU_FFI_EXPORT XLA_FFI_Error *
onnx_relu_jax_ffi(XLA_FFI_CallFrame *frame)
{
    /* XLA first asks, with this extension, which FFI version the handler was built for. */
    for (XLA_FFI_Extension_Base *ext = frame->extension_start; ext != NULL; ext = ext->next) {
        if (ext->type == XLA_FFI_Extension_Metadata) {
            XLA_FFI_Metadata *metadata = ((XLA_FFI_Metadata_Extension *)ext)->metadata;
            metadata->api_version.major_version = XLA_FFI_API_MAJOR;
            metadata->api_version.minor_version = XLA_FFI_API_MINOR;
            metadata->traits = 0;
            metadata->state_type_id.type_id = 0; /* stateless */
            return NULL;
        }
    }
    if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) {
        return NULL;
    }
    if (frame->args.size != 1 || frame->rets.size != 1 ||
        frame->args.types[0] != XLA_FFI_ArgType_BUFFER ||
        frame->rets.types[0] != XLA_FFI_RetType_BUFFER) {
        return relu_ffi_error(frame->api, "onnx_relu: relu takes one array and gives one");
    }
    const XLA_FFI_Buffer *in = frame->args.args[0];
    XLA_FFI_Buffer *out = frame->rets.rets[0];
    int code = (int)in->dtype >= 0 && (int)in->dtype < RELU_FFI_TYPES && relu_ffi_kernel != NULL
                   ? relu_ffi_codes[in->dtype]
                   : -1;
    if (code < 0 || out->dtype != in->dtype || out->rank != in->rank) {
        return relu_ffi_error(frame->api, "onnx_relu: relu does not take this element type");
    }
    ptrdiff_t n = 1;
    for (int64_t axis = 0; axis < in->rank; axis++) {
        n *= (ptrdiff_t)in->dims[axis];
    }
    const ptrdiff_t size = (ptrdiff_t)relu_ffi_kernel->type_size(code);
    relu_ffi_kernel->compute(code, in->data, out->data, n, size, size);
    return NULL;
}
