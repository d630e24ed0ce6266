// A shared library that is not a Weir plugin: no weir_plugin_entry.
#include "weir/plugin.h"

extern "C" WEIR_PLUGIN_EXPORT int some_other_function(void) { return 42; }
