// A plugin whose op names a device code Weir does not know: refused, naming
// the op and the known codes.
#include "weir/plugin.h"

static int32_t compute(void*, WeirKernelContext*, char*, size_t) { return WEIR_STATUS_OK; }
static const char* const names[] = {"X"};
static const WeirOpDef ops[] = {{sizeof(WeirOpDef), "TpuOp", "", 1, names, 1, names, 0, nullptr, 0, nullptr, nullptr,
                                 nullptr, compute, nullptr, nullptr, 0, 7}};
static const WeirPluginInfo info = {WEIR_PLUGIN_ABI_VERSION, sizeof(WeirPluginInfo), "bad_device", 1, ops};

extern "C" WEIR_PLUGIN_EXPORT const WeirPluginInfo* weir_plugin_entry(void) { return &info; }
