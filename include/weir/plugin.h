/* Weir custom op plugins: the C ABI between Weir and a shared library.
 *
 * A plugin exports one function, weir_plugin_entry, returning a static
 * description of its ops. Weir loads it with dlopen (graph-runner --plugin
 * LIB.so, or weir::load_plugin in C++), checks the ABI version, and
 * registers each op's schema and its kernel for the device the op's
 * description names (the CPU unless it says otherwise). Only C types cross this
 * boundary: no C++ objects, no exceptions. Every callback that can fail
 * returns WEIR_STATUS_OK or WEIR_STATUS_ERROR and writes a message into the
 * buffer it is given.
 *
 *   static const char* inputs[] = {"X"};
 *   static const char* outputs[] = {"Y"};
 *   static int32_t my_compute(void* state, WeirKernelContext* ctx, char* error, size_t error_size) { ... }
 *   static const WeirOpDef ops[] = {{.struct_size = sizeof(WeirOpDef), .name = "MyOp",
 *                                    .num_inputs = 1, .input_names = inputs,
 *                                    .num_outputs = 1, .output_names = outputs, .compute = my_compute}};
 *   static const WeirPluginInfo info = {WEIR_PLUGIN_ABI_VERSION, sizeof(WeirPluginInfo), "my_ops", 1, ops};
 *   WEIR_PLUGIN_EXPORT const WeirPluginInfo* weir_plugin_entry(void) { return &info; }
 *
 * Versioning: WEIR_PLUGIN_ABI_VERSION changes when a struct changes
 * incompatibly; a plugin built against another version is refused with both
 * numbers. Structs start with struct_size so fields can be appended within a
 * version: Weir reads only the fields a plugin's struct_size covers.
 *
 * Optional entries (marked "optional" below) may be NULL and take the
 * default given. include/weir/plugin.hpp wraps all of this for C++ plugins.
 */
#ifndef WEIR_PLUGIN_H_
#define WEIR_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEIR_PLUGIN_ABI_VERSION 1u
#define WEIR_PLUGIN_ENTRY_SYMBOL "weir_plugin_entry"
#define WEIR_PLUGIN_MAX_RANK 8

#if defined(__GNUC__)
#define WEIR_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define WEIR_PLUGIN_EXPORT
#endif

enum WeirStatus { WEIR_STATUS_OK = 0, WEIR_STATUS_ERROR = 1 };

/* The values of Weir's (and ONNX's) dtype enumeration. */
enum WeirDType {
  WEIR_DTYPE_UNDEFINED = 0,
  WEIR_DTYPE_FLOAT32 = 1,
  WEIR_DTYPE_UINT8 = 2,
  WEIR_DTYPE_INT8 = 3,
  WEIR_DTYPE_INT16 = 5,
  WEIR_DTYPE_INT32 = 6,
  WEIR_DTYPE_INT64 = 7,
  WEIR_DTYPE_BOOL = 9,
  WEIR_DTYPE_FLOAT16 = 10,
  WEIR_DTYPE_FLOAT64 = 11,
  WEIR_DTYPE_BFLOAT16 = 16
};

enum WeirAttrType { WEIR_ATTR_INT = 0, WEIR_ATTR_FLOAT = 1, WEIR_ATTR_STRING = 2 };

/* WeirOpDef.device: where an op's compute function runs. Its inputs and
 * outputs live on that device; a CUDA kernel enqueues its work on
 * WeirKernelContext.stream (a cudaStream_t) and returns without waiting. To
 * give one op kernels for several devices, describe it once per device: the
 * first description defines the op (schema, inference), the others must
 * declare the same inputs, outputs and attributes and add their kernel. */
enum WeirDeviceType { WEIR_DEVICE_CPU = 0, WEIR_DEVICE_CUDA = 1 };

/* WeirOpDef.flags. Without WEIR_OP_FLAG_PURE an op is treated as stateful:
 * passes never fold it at compile time nor merge two identical nodes of it. */
enum WeirOpFlag { WEIR_OP_FLAG_PURE = 1 /* same inputs, same outputs; no side effects */ };

typedef struct WeirAttrSpec {
  const char* name;
  int32_t type;        /* WeirAttrType */
  int32_t required;    /* 1: no default; a node without it is an error */
  int64_t default_int;
  double default_float;
  const char* default_string;
} WeirAttrSpec;

/* Read access to a node's attributes (schema defaults filled in). Each
 * returns WEIR_STATUS_ERROR when the attribute is missing or of another type. */
typedef struct WeirAttributes {
  const void* opaque;
  int32_t (*get_int)(const void* opaque, const char* name, int64_t* value);
  int32_t (*get_float)(const void* opaque, const char* name, double* value);
  int32_t (*get_string)(const void* opaque, const char* name, const char** value);
} WeirAttributes;

/* A value's type during shape inference; a size of -1 is unknown (symbolic). */
typedef struct WeirTensorType {
  int32_t dtype; /* WeirDType */
  int32_t rank;  /* -1: unknown rank */
  int64_t sizes[WEIR_PLUGIN_MAX_RANK];
} WeirTensorType;

typedef struct WeirInferenceContext {
  size_t struct_size;
  int32_t num_inputs;
  const WeirTensorType* inputs;
  int32_t num_outputs;
  WeirTensorType* outputs; /* to fill in */
  const WeirAttributes* attributes;
} WeirInferenceContext;

/* A tensor during compute: dense, row-major. */
typedef struct WeirTensor {
  int32_t dtype;
  int32_t rank;
  const int64_t* sizes;
  void* data;
} WeirTensor;

typedef struct WeirKernelContext {
  size_t struct_size;
  int32_t num_inputs;
  const WeirTensor* inputs; /* an absent optional input has data == NULL */
  int32_t num_outputs;
  /* Allocates output `index`; returns its tensor (zero-filled), or NULL
   * after writing the reason to `error` of the compute call. */
  const WeirTensor* (*allocate_output)(void* opaque, int32_t index, int32_t dtype, int32_t rank,
                                       const int64_t* sizes);
  void* opaque;
  void* stream; /* a CUDA kernel's cudaStream_t; NULL on the CPU */
} WeirKernelContext;

typedef struct WeirOpDef {
  size_t struct_size;
  const char* name;
  const char* domain; /* optional: "" */
  int32_t num_inputs;
  const char* const* input_names;
  int32_t num_outputs;
  const char* const* output_names;
  int32_t num_attributes;
  const WeirAttrSpec* attributes; /* optional when num_attributes is 0 */
  int32_t num_dtypes;
  const int32_t* dtypes; /* optional: the dtypes input 0 may have; default f32 */
  /* optional: default sets every output to input 0's type */
  int32_t (*infer)(const WeirInferenceContext* ctx, char* error, size_t error_size);
  /* optional: default state NULL */
  int32_t (*create)(const WeirAttributes* attributes, void** state, char* error, size_t error_size);
  int32_t (*compute)(void* state, WeirKernelContext* ctx, char* error, size_t error_size);
  void (*destroy)(void* state); /* optional */
  const char* doc;              /* optional */
  int32_t flags;                /* optional: WeirOpFlag bits; default 0 (stateful) */
  int32_t device;               /* optional: WeirDeviceType of compute; default WEIR_DEVICE_CPU */
} WeirOpDef;

typedef struct WeirPluginInfo {
  uint32_t abi_version; /* WEIR_PLUGIN_ABI_VERSION the plugin was built against */
  size_t struct_size;
  const char* name;
  int32_t num_ops;
  const WeirOpDef* ops;
} WeirPluginInfo;

typedef const WeirPluginInfo* (*WeirPluginEntryFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_PLUGIN_H_ */
