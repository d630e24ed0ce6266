// A plugin that claims another ABI version: the loader must refuse it.
#include "weir/plugin.h"

static int32_t compute(void*, WeirKernelContext*, char*, size_t) { return WEIR_STATUS_OK; }
static const char* const names[] = {"X"};
static const WeirOpDef ops[] = {{sizeof(WeirOpDef), "FutureOp", "", 1, names, 1, names, 0, nullptr, 0, nullptr,
                                 nullptr, nullptr, compute, nullptr, nullptr, 0}};
static const WeirPluginInfo info = {WEIR_PLUGIN_ABI_VERSION + 41, sizeof(WeirPluginInfo), "future", 1, ops};

extern "C" WEIR_PLUGIN_EXPORT const WeirPluginInfo* weir_plugin_entry(void) { return &info; }
