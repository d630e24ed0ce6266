// Multi-tensor launches: one kernel launch works on a list of tensors (an
// optimizer's parameters, the gradients of a clip or an unscale), each cut
// into fixed chunks, block b of a launch taking chunk
// block_chunk[b] of tensor block_tensor[b]. The table travels in the
// kernel's arguments (no device copy of pointers before the launch); a list
// longer than one table holds is split over several launches, a tensor's
// chunks possibly straddling two.
//
//   launch_in_batches<2>(refs, n, [&](const TensorListBatch<2>& batch) {
//     my_kernel<<<batch.blocks, kThreads, 0, stream>>>(batch, ...);
//   });
//
// A tensor's chunks have global indices first_chunk + k over the whole list,
// in list order, so a per-chunk partial result (a sum of squares) has one
// fixed slot whatever batch computed it: reductions over them are
// deterministic. Plain C++ (the .cu launchers use it; tests check the
// tables on the host).
#pragma once

#include <cstdint>

namespace weir::cuda {

constexpr int kListMaxTensors = 24;
constexpr int kListMaxBlocks = 320;
// Elements per block: large enough that a block's fixed cost is small,
// small enough that a few-thousand-element tensor still spreads over SMs.
constexpr int64_t kListChunk = 8192;

// kLists parallel lists (param, grad, state...), every tensor of one index
// having the same element count. Under 4 KiB of kernel arguments for kLists <= 7.
template <int kLists>
struct TensorListBatch {
  void* data[kLists][kListMaxTensors];
  int64_t count[kListMaxTensors];
  int32_t first_chunk[kListMaxTensors];  // global index of the tensor's chunk 0
  int32_t tensor_index[kListMaxTensors];  // the tensor's index in the whole list
  int32_t block_chunk[kListMaxBlocks];
  uint8_t block_tensor[kListMaxBlocks];
  int tensors;
  int blocks;
};

// The classic 4 KiB limit on a kernel's arguments, with room for the rest.
static_assert(sizeof(TensorListBatch<7>) <= 3584, "a batch table must fit in a kernel's arguments");

template <int kLists>
struct TensorRefs {
  void* data[kLists];
  int64_t count;
};

inline int64_t chunks_of(int64_t count) { return (count + kListChunk - 1) / kListChunk; }

// Calls launch(batch) for consecutive batches covering every chunk of
// `tensors` (empty tensors have none). Host code.
template <int kLists, typename Launch>
void launch_in_batches(const TensorRefs<kLists>* tensors, int num_tensors, Launch&& launch) {
  TensorListBatch<kLists> batch{};
  int32_t global_chunk = 0;
  auto flush = [&]() {
    if (batch.blocks > 0) launch(batch);
    batch.tensors = 0;
    batch.blocks = 0;
  };
  auto open_slot = [&](int t, int32_t first_chunk) {
    const int slot = batch.tensors++;
    for (int list = 0; list < kLists; ++list) batch.data[list][slot] = tensors[t].data[list];
    batch.count[slot] = tensors[t].count;
    batch.first_chunk[slot] = first_chunk;
    batch.tensor_index[slot] = t;
    return slot;
  };
  for (int t = 0; t < num_tensors; ++t) {
    const int64_t chunks = chunks_of(tensors[t].count);
    if (chunks == 0) continue;
    if (batch.tensors == kListMaxTensors) flush();
    int slot = open_slot(t, global_chunk);
    for (int64_t k = 0; k < chunks; ++k) {
      if (batch.blocks == kListMaxBlocks) {
        flush();
        slot = open_slot(t, global_chunk);
      }
      batch.block_tensor[batch.blocks] = static_cast<uint8_t>(slot);
      batch.block_chunk[batch.blocks] = static_cast<int32_t>(k);
      ++batch.blocks;
    }
    global_chunk += static_cast<int32_t>(chunks);
  }
  flush();
}

}  // namespace weir::cuda
