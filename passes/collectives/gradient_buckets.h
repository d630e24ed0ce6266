// Gradient buckets: the data-parallel rewrite's AllReduces (one per
// gradient) fused into a few AllReduces of flat buckets, so a step makes a
// few large calls instead of one per parameter (the per-call latency is paid
// once per bucket; PyTorch DDP's and Fleet's fuse_all_reduce_ops).
//
//   weir::GradientBuckets pass({.bucket_bytes = 32 << 20, .first_bucket_bytes = 1 << 20, .comm_streams = 2});
//   pass.run(step_graph, ctx);            // after the data_parallel pass
//   for (const weir::GradientBucket& b : pass.result().buckets) ...   // members, bytes, stream
//
// A bucket is filled in the order the backward pass produces the gradients
// (the graph's topological order), so the first bucket, kept small, is ready
// while most of the backward pass still runs, and its AllReduce overlaps it:
// a bucket's AllReduce reads only its own gradients, and each gradient's
// reader (its update) reads only its own bucket's result. Each gradient is
// viewed as 1-D (Reshape), the bucket is their Concat (each value at an
// `align_bytes` boundary), padded with zeros to a multiple of
// `pad_to_multiple` (what a topology's reduce-scatter divides), averaged by
// one AllReduce, and split back (Split, Reshape). The memory planner places
// the gradients inside the Concat's output and the pieces inside the
// AllReduce's (runtime/memory_planner.h): neither copies.
// Buckets take communication streams "comm", "comm:1", ... in turn
// (`comm_streams`; Fleet's nccl_comm_num), each stream its own communicator
// context, so several buckets are in flight at once.
//
// Half-precision communication (`dtype` f16 or bf16): a bucket is averaged
// in that dtype and cast back once after the AllReduce (half the bytes).
// Under mixed precision a gradient that is already a Cast up from that dtype
// (AMP's backward Cast) enters its bucket before the Cast: the Cast moves
// across the AllReduce instead of a second one being added.
//
// The AllReduces bucketed are the data-parallel rewrite's (tag "dp/..."),
// except those of graph outputs (the loss: averaged where it is computed,
// before the backward pass). The tail reads values under the same names as
// before, so the pass changes no name a caller looks up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "passes/pass.h"

namespace weir {

struct GradientBucketOptions {
  // Bytes a bucket holds (the communicated bytes, after any cast); a value
  // larger than this is a bucket alone. 0: every value its own bucket (no
  // fusion, but padding, streams and dtype still apply).
  int64_t bucket_bytes = int64_t{32} << 20;
  int64_t first_bucket_bytes = int64_t{1} << 20;  // the first bucket's limit
  int comm_streams = 1;
  // The dtype buckets are averaged in; kFloat32: each value's own dtype.
  DType dtype = DType::kFloat32;
  int64_t pad_to_multiple = 1;  // bucket lengths padded to a multiple of this
  // Each value starts at a multiple of this many bytes in its bucket (zeros
  // fill the gaps), so the memory planner can place every gradient inside
  // its bucket, where the backward pass then writes it: no packing copy.
  int64_t align_bytes = 64;
  // false: every bucket's AllReduce also waits (control edges) for every
  // bucketed gradient, so communication starts after the backward pass,
  // as a baseline to measure the overlap against.
  bool overlap = true;
};

struct GradientBucket {
  std::string allreduce;              // the bucket's AllReduce node
  std::vector<std::string> values;    // what it averages, in bucket order
  int64_t elements = 0;               // padded length, gaps included
  int64_t gap_elements = 0;           // zeros between values (align_bytes)
  DType dtype = DType::kFloat32;      // as communicated
  std::string stream;                 // "comm", "comm:1", ...
  int64_t bytes() const { return elements * static_cast<int64_t>(dtype_size(dtype)); }
};

struct GradientBucketResult {
  std::vector<GradientBucket> buckets{};
  int moved_casts = 0;   // AMP's Casts moved across an AllReduce
  int added_casts = 0;   // Casts added (into and out of half-precision buckets)
  int64_t allreduce_bytes = 0;  // what the data-parallel AllReduces average per step, each rank, after the pass
};

class GradientBuckets final : public Pass {
 public:
  explicit GradientBuckets(GradientBucketOptions options) : options_(options) {}
  std::string name() const override { return "gradient_buckets"; }
  bool run(Graph& graph, PassContext& context) override;
  const GradientBucketResult& result() const { return result_; }

 private:
  GradientBucketOptions options_;
  GradientBucketResult result_{};
};

// The bytes per step, each rank, that the data-parallel AllReduces (tag
// "dp/...") of `graph` average: their inputs' static sizes.
int64_t data_parallel_allreduce_bytes(const Graph& graph);

}  // namespace weir
