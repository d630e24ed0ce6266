// A plugin op that shares its name with a built-in one and has a kernel per
// device: "Relu" in domain com.weir.test computes X + 100 (so a run shows
// whose kernel ran), described once for the CPU and once for CUDA. The CUDA
// description's compute only reports that it ran: these tests never reach
// a GPU; they check that the loader registers a CUDA kernel under the op.
#include "weir/plugin.h"

static int32_t plus_hundred(void*, WeirKernelContext* ctx, char*, size_t) {
  const WeirTensor& x = ctx->inputs[0];
  int64_t n = 1;
  for (int32_t i = 0; i < x.rank; ++i) n *= x.sizes[i];
  const WeirTensor* y = ctx->allocate_output(ctx->opaque, 0, x.dtype, x.rank, x.sizes);
  if (y == nullptr) return WEIR_STATUS_ERROR;
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(y->data)[i] = static_cast<const float*>(x.data)[i] + 100.0f;
  return WEIR_STATUS_OK;
}

static int32_t on_gpu(void*, WeirKernelContext*, char* error, size_t error_size) {
  const char message[] = "the CUDA kernel ran";
  for (size_t i = 0; i < error_size && i < sizeof(message); ++i) error[i] = message[i];
  return WEIR_STATUS_ERROR;
}

static const char* const inputs[] = {"X"};
static const char* const outputs[] = {"Y"};
static const WeirOpDef ops[] = {
    {sizeof(WeirOpDef), "Relu", "com.weir.test", 1, inputs, 1, outputs, 0, nullptr, 0, nullptr, nullptr, nullptr,
     plus_hundred, nullptr, "X + 100, named like a built-in op", WEIR_OP_FLAG_PURE, WEIR_DEVICE_CPU},
    {sizeof(WeirOpDef), "Relu", "com.weir.test", 1, inputs, 1, outputs, 0, nullptr, 0, nullptr, nullptr, nullptr,
     on_gpu, nullptr, nullptr, WEIR_OP_FLAG_PURE, WEIR_DEVICE_CUDA}};
static const WeirPluginInfo info = {WEIR_PLUGIN_ABI_VERSION, sizeof(WeirPluginInfo), "device_ops", 2, ops};

extern "C" WEIR_PLUGIN_EXPORT const WeirPluginInfo* weir_plugin_entry(void) { return &info; }
