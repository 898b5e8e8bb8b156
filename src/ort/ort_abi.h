/*
 * ort_abi.h - the part of onnxruntime's C interface that the onnx-relu custom-op library uses,
 * declared here in the project's own words (the onnxruntime wheel ships no headers, and the
 * project copies no third-party source).
 *
 * What is fixed by onnxruntime's ABI, and therefore by these declarations:
 *  - a custom-op library exports `RegisterCustomOps(OrtSessionOptions *, const OrtApiBase *)`;
 *  - OrtApiBase is two function pointers: GetApi(version) -> the function table of that API
 *    version (NULL if the runtime is older), and GetVersionString();
 *  - the function table (OrtApi) is append-only: a member keeps its index forever, so the table
 *    is declared up to the last member used, with anonymous placeholder slots for the members not
 *    used (every member is one function pointer); ORT_ABI_CHECK_SLOT below pins each index;
 *  - OrtCustomOp is a struct of callbacks whose `version` field tells onnxruntime which members
 *    exist; members are likewise only ever appended;
 *  - element types are numbered as ONNX's TensorProto.DataType.
 * Every member used here exists in API version 17 (onnxruntime 1.17), which the library asks
 * for: OrtApi's KernelContext_ParallelFor (a custom kernel's work on the session's intra-op
 * thread pool) and OrtCustomOp's GetStartVersion/GetEndVersion (an op for a range of opsets) are
 * the newest; CreateKernelV2 and KernelComputeV2 (which let a kernel report an error) came with
 * version 16.
 */
#ifndef ONNX_RELU_ORT_ABI_H
#define ONNX_RELU_ORT_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The API version the library asks GetApi for, and the custom-op version it declares. */
#define ORT_ABI_VERSION 17u

/* Opaque onnxruntime objects, only ever handled through pointers. */
typedef struct OrtStatus OrtStatus;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtCustomOpDomain OrtCustomOpDomain;
typedef struct OrtKernelInfo OrtKernelInfo;
typedef struct OrtKernelContext OrtKernelContext;
typedef struct OrtValue OrtValue;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtShapeInferContext OrtShapeInferContext;

/* Element types: ONNX TensorProto.DataType numbers (only those Relu allows are named). */
typedef enum {
    ORT_ABI_UNDEFINED = 0,
    ORT_ABI_FLOAT = 1,
    ORT_ABI_INT8 = 3,
    ORT_ABI_INT16 = 5,
    ORT_ABI_INT32 = 6,
    ORT_ABI_INT64 = 7,
    ORT_ABI_FLOAT16 = 10,
    ORT_ABI_DOUBLE = 11,
    ORT_ABI_BFLOAT16 = 16
} ort_abi_element_type;

/* Error codes for CreateStatus (onnxruntime's OrtErrorCode numbering). */
typedef enum {
    ORT_ABI_OK = 0,
    ORT_ABI_FAIL = 1,
    ORT_ABI_INVALID_ARGUMENT = 2,
    ORT_ABI_RUNTIME_EXCEPTION = 6,
    ORT_ABI_NOT_IMPLEMENTED = 9
} ort_abi_error_code;

/* A placeholder for a table member this library never calls. */
typedef void (*ort_abi_unused_slot)(void);

typedef struct OrtApi {
    /* 0-2 */
    OrtStatus *(*CreateStatus)(ort_abi_error_code code, const char *message);
    ort_abi_unused_slot unused_1_2[2];
    /* 3-25: environment, session and session-option functions */
    ort_abi_unused_slot unused_3_25[23];
    /* 26-28: custom op domains */
    OrtStatus *(*CreateCustomOpDomain)(const char *domain, OrtCustomOpDomain **out);
    OrtStatus *(*CustomOpDomain_Add)(OrtCustomOpDomain *domain, const void *op);
    OrtStatus *(*AddCustomOpDomain)(OrtSessionOptions *options, OrtCustomOpDomain *domain);
    /* 29-50 */
    ort_abi_unused_slot unused_29_50[22];
    /* 51 */
    OrtStatus *(*GetTensorMutableData)(OrtValue *value, void **out);
    /* 52-59 */
    ort_abi_unused_slot unused_52_59[8];
    /* 60-62: element type and shape of a tensor's type-and-shape info */
    OrtStatus *(*GetTensorElementType)(const OrtTensorTypeAndShapeInfo *info, ort_abi_element_type *out);
    OrtStatus *(*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo *info, size_t *out);
    OrtStatus *(*GetDimensions)(const OrtTensorTypeAndShapeInfo *info, int64_t *dims, size_t count);
    /* 63: the symbolic names of the dimensions ("" for one without a name) */
    OrtStatus *(*GetSymbolicDimensions)(const OrtTensorTypeAndShapeInfo *info,
                                        const char *dim_params[], size_t dim_params_length);
    /* 64-65 */
    OrtStatus *(*GetTensorShapeElementCount)(const OrtTensorTypeAndShapeInfo *info, size_t *out);
    OrtStatus *(*GetTensorTypeAndShape)(const OrtValue *value, OrtTensorTypeAndShapeInfo **out);
    /* 66-89 */
    ort_abi_unused_slot unused_66_89[24];
    /* 90-91: a custom kernel's input and (allocated on request) output */
    OrtStatus *(*KernelContext_GetInput)(const OrtKernelContext *context, size_t index,
                                         const OrtValue **out);
    OrtStatus *(*KernelContext_GetOutput)(OrtKernelContext *context, size_t index,
                                          const int64_t *dims, size_t count, OrtValue **out);
    /* 92 */
    ort_abi_unused_slot unused_92;
    /* 93 */
    void (*ReleaseStatus)(OrtStatus *status);
    /* 94-98 */
    ort_abi_unused_slot unused_94_98[5];
    /* 99 */
    void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo *info);
    /* 100-129 */
    ort_abi_unused_slot unused_100_129[30];
    /* 130: a session option's key-value configuration entry */
    OrtStatus *(*AddSessionConfigEntry)(OrtSessionOptions *options, const char *key,
                                        const char *value);
    /* 131-236 */
    ort_abi_unused_slot unused_131_236[106];
    /* 237-238: reading a session config entry (value copied into `value`, `*size` bytes with
     * its NUL; a too-small buffer fails and sets *size to the size needed) */
    OrtStatus *(*HasSessionConfigEntry)(const OrtSessionOptions *options, const char *key,
                                        int *out);
    OrtStatus *(*GetSessionConfigEntry)(const OrtSessionOptions *options, const char *key,
                                        char *value, size_t *size);
    /* 239-267 */
    ort_abi_unused_slot unused_239_267[29];
    /* 268, 270: a custom op's shape inference (the input's type and shape, the output's) */
    OrtStatus *(*ShapeInferContext_GetInputTypeShape)(const OrtShapeInferContext *context,
                                                      size_t index,
                                                      OrtTensorTypeAndShapeInfo **info);
    ort_abi_unused_slot unused_269;
    OrtStatus *(*ShapeInferContext_SetOutputTypeShape)(const OrtShapeInferContext *context,
                                                       size_t index,
                                                       const OrtTensorTypeAndShapeInfo *info);
    /* 271: names the dimensions of a type-and-shape info */
    OrtStatus *(*SetSymbolicDimensions)(OrtTensorTypeAndShapeInfo *info, const char *dim_params[],
                                        size_t dim_params_length);
    /* 272-273 */
    ort_abi_unused_slot unused_272_273[2];
    /* 274: runs fn(usr_data, i) for i in [0, total) on the session's intra-op pool (num_batch 0:
     * onnxruntime chooses the batches); returns when all are done */
    OrtStatus *(*KernelContext_ParallelFor)(const OrtKernelContext *context,
                                            void (*fn)(void *usr_data, size_t index), size_t total,
                                            size_t num_batch, void *usr_data);
} OrtApi;

#define ORT_ABI_CHECK_SLOT(member, index)                                                      \
    _Static_assert(offsetof(OrtApi, member) == (index) * sizeof(void (*)(void)),               \
                   "OrtApi member " #member " must be slot " #index)
ORT_ABI_CHECK_SLOT(CreateStatus, 0);
ORT_ABI_CHECK_SLOT(CreateCustomOpDomain, 26);
ORT_ABI_CHECK_SLOT(CustomOpDomain_Add, 27);
ORT_ABI_CHECK_SLOT(AddCustomOpDomain, 28);
ORT_ABI_CHECK_SLOT(GetTensorMutableData, 51);
ORT_ABI_CHECK_SLOT(GetTensorElementType, 60);
ORT_ABI_CHECK_SLOT(GetDimensionsCount, 61);
ORT_ABI_CHECK_SLOT(GetDimensions, 62);
ORT_ABI_CHECK_SLOT(GetSymbolicDimensions, 63);
ORT_ABI_CHECK_SLOT(GetTensorShapeElementCount, 64);
ORT_ABI_CHECK_SLOT(GetTensorTypeAndShape, 65);
ORT_ABI_CHECK_SLOT(KernelContext_GetInput, 90);
ORT_ABI_CHECK_SLOT(KernelContext_GetOutput, 91);
ORT_ABI_CHECK_SLOT(ReleaseStatus, 93);
ORT_ABI_CHECK_SLOT(ReleaseTensorTypeAndShapeInfo, 99);
ORT_ABI_CHECK_SLOT(AddSessionConfigEntry, 130);
ORT_ABI_CHECK_SLOT(HasSessionConfigEntry, 237);
ORT_ABI_CHECK_SLOT(GetSessionConfigEntry, 238);
ORT_ABI_CHECK_SLOT(ShapeInferContext_GetInputTypeShape, 268);
ORT_ABI_CHECK_SLOT(ShapeInferContext_SetOutputTypeShape, 270);
ORT_ABI_CHECK_SLOT(SetSymbolicDimensions, 271);
ORT_ABI_CHECK_SLOT(KernelContext_ParallelFor, 274);

typedef struct OrtApiBase {
    const OrtApi *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} OrtApiBase;

/* Input/output characteristic: 0 = required. Memory type: 0 = the provider's default. */
enum { ORT_ABI_REQUIRED = 0, ORT_ABI_DEFAULT_MEMORY = 0 };

/* A custom operator: its schema (name, input and output types) and kernel callbacks.
 * onnxruntime reads the members up to the one `version` says exists (17: GetEndVersion). */
typedef struct OrtCustomOp OrtCustomOp;
struct OrtCustomOp {
    uint32_t version;
    void *(*CreateKernel)(const OrtCustomOp *op, const OrtApi *api, const OrtKernelInfo *info);
    const char *(*GetName)(const OrtCustomOp *op);
    const char *(*GetExecutionProviderType)(const OrtCustomOp *op);
    ort_abi_element_type (*GetInputType)(const OrtCustomOp *op, size_t index);
    size_t (*GetInputTypeCount)(const OrtCustomOp *op);
    ort_abi_element_type (*GetOutputType)(const OrtCustomOp *op, size_t index);
    size_t (*GetOutputTypeCount)(const OrtCustomOp *op);
    void (*KernelCompute)(void *kernel, OrtKernelContext *context);
    void (*KernelDestroy)(void *kernel);
    /* version >= 8 */
    int (*GetInputCharacteristic)(const OrtCustomOp *op, size_t index);
    int (*GetOutputCharacteristic)(const OrtCustomOp *op, size_t index);
    /* version >= 13 */
    int (*GetInputMemoryType)(const OrtCustomOp *op, size_t index);
    /* version >= 14 (read only for variadic inputs/outputs) */
    int (*GetVariadicInputMinArity)(const OrtCustomOp *op);
    int (*GetVariadicInputHomogeneity)(const OrtCustomOp *op);
    int (*GetVariadicOutputMinArity)(const OrtCustomOp *op);
    int (*GetVariadicOutputHomogeneity)(const OrtCustomOp *op);
    /* version >= 16: used instead of CreateKernel/KernelCompute where set; return a status */
    OrtStatus *(*CreateKernelV2)(const OrtCustomOp *op, const OrtApi *api, const OrtKernelInfo *info,
                                 void **kernel);
    OrtStatus *(*KernelComputeV2)(void *kernel, OrtKernelContext *context);
    /* version >= 17: the output's type and shape from the input's, and the opsets
     * [start, end] of the domain the op holds for */
    OrtStatus *(*InferOutputShapeFn)(const OrtCustomOp *op, OrtShapeInferContext *context);
    int (*GetStartVersion)(const OrtCustomOp *op);
    int (*GetEndVersion)(const OrtCustomOp *op);
};

#endif /* ONNX_RELU_ORT_ABI_H */
