// oneDNN scratch memory owned by the executing thread.
//
// Debian's oneDNN is built without DNNL_ENABLE_CONCURRENT_EXEC, so in its
// default (library) scratchpad mode a primitive uses a scratchpad tied to
// the thread that created it: two threads executing primitives created on
// one thread (the ranks of an in-process world running one plan's kernels,
// or several inter-op threads) write the same scratch memory, and results
// change from run to run. Every cached primitive is therefore created with
// a user scratchpad and executed with the scratchpad of the thread that
// executes it:
//
//   dnnl::primitive_attr attr = weir::user_scratchpad();
//   dnnl::matmul::primitive_desc pd(desc, attr, engine);
//   args.emplace(DNNL_ARG_SCRATCHPAD, weir::thread_scratchpad(pd.scratchpad_desc(), engine));
//   primitive.execute(stream, args);   // then stream.wait(), before the next thread_scratchpad()
//
// The memory stays valid until the thread's next thread_scratchpad() call.
#pragma once

#include <dnnl.hpp>

namespace weir {

inline dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr attr = {}) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// This thread's scratch memory, at least desc.get_size() bytes.
dnnl::memory thread_scratchpad(const dnnl::memory::desc& desc, const dnnl::engine& engine);
// The same memory as a pointer to at least `bytes` (a kernel that keeps a
// scratchpad memory object re-points it with set_data_handle), or with
// `slot` 1 to kThreadScratchSlots - 1 another buffer of the thread's, for
// what one primitive run needs beside its scratchpad (the reorder targets
// of a conv in blocked layouts). Each grows by half again at least, and
// from 2 MiB sits on transparent huge pages: a first run would otherwise
// fault in a new buffer a page at a time for every primitive.
inline constexpr int kThreadScratchSlots = 4;
void* thread_scratchpad_data(size_t bytes, int slot = 0);

}  // namespace weir
