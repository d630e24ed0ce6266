#include "ops/loss/class_center_sampling.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/error.h"
#include "core/splitmix.h"
#include "ops/loss/class_shards.h"
#include "ops/node_attributes.h"

namespace weir {

namespace {

class SampleClassCentersKernel final : public OpKernel {
 public:
  explicit SampleClassCentersKernel(const Node& node)
      : classes_(int_attr(node, "classes", 0)),
        num_sample_(int_attr(node, "num_sample", 0)),
        seed_(static_cast<uint64_t>(int_attr(node, "seed", 0))) {}

  void compute(KernelContext& ctx) override {
    const Communicator* comm = ctx.communicator();
    ClassShard shard;
    try {
      shard = class_shard(classes_, comm != nullptr ? comm->size() : 1, comm != nullptr ? comm->rank() : 0);
    } catch (const Error& error) {
      ctx.fail(error.message());
    }
    if (num_sample_ < 1 || num_sample_ > shard.width) {
      ctx.fail("num_sample " + std::to_string(num_sample_) + " must be in [1, " + std::to_string(shard.width) +
               "] (this world's shard width of " + std::to_string(classes_) + " classes)");
    }
    const Tensor& labels = ctx.input(0);
    if (labels.sizes().size() != 1) ctx.fail("local_labels must be [batch], got " + labels.type_string());
    const int64_t batch = labels.num_elements();
    const std::vector<int64_t> local = shard_column_labels(ctx, labels, batch, shard.count);

    // chosen[c]: the shard column c is in the sample.
    std::vector<char> chosen(static_cast<size_t>(shard.width), 0);
    int64_t positives = 0;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t column = local[static_cast<size_t>(b)];
      if (column >= 0 && !chosen[static_cast<size_t>(column)]) {
        chosen[static_cast<size_t>(column)] = 1;
        ++positives;
      }
    }
    if (positives > num_sample_) {
      ctx.fail("the batch names " + std::to_string(positives) + " distinct classes of this rank's shard, more than "
               "num_sample " + std::to_string(num_sample_) + ": sample at least as many centres as the global batch has rows");
    }
    // The others: a partial Fisher-Yates shuffle of this rank's unchosen
    // classes, then padding columns if the rank holds fewer than K.
    std::vector<int64_t> others;
    others.reserve(static_cast<size_t>(shard.count - positives));
    for (int64_t c = 0; c < shard.count; ++c) {
      if (!chosen[static_cast<size_t>(c)]) others.push_back(c);
    }
    // Keyed by the seed and the run alone (SplitMix64), so a run replays.
    const uint64_t run = ctx.rng_counter().value_or(runs_.fetch_add(1));
    uint64_t state = seed_ ^ (run * 0xD1B54A32D192ED03ULL);
    int64_t wanted = num_sample_ - positives;
    const int64_t from_others = std::min<int64_t>(wanted, static_cast<int64_t>(others.size()));
    for (int64_t i = 0; i < from_others; ++i) {
      const uint64_t span = static_cast<uint64_t>(others.size()) - static_cast<uint64_t>(i);
      const size_t j = static_cast<size_t>(i) + static_cast<size_t>(splitmix64_next(state) % span);
      std::swap(others[static_cast<size_t>(i)], others[j]);
      chosen[static_cast<size_t>(others[static_cast<size_t>(i)])] = 1;
    }
    wanted -= from_others;
    for (int64_t c = shard.count; c < shard.width && wanted > 0; ++c, --wanted) chosen[static_cast<size_t>(c)] = 1;

    Tensor& columns = ctx.allocate_output(0, DType::kInt64, {num_sample_}, KernelContext::Fill::kUninitialized);
    std::vector<int64_t> position(static_cast<size_t>(shard.width), -1);
    int64_t k = 0;
    for (int64_t c = 0; c < shard.width; ++c) {
      if (!chosen[static_cast<size_t>(c)]) continue;
      position[static_cast<size_t>(c)] = k;
      columns.data<int64_t>()[k++] = c;
    }
    Tensor& sampled = ctx.allocate_output(1, DType::kInt64, {batch}, KernelContext::Fill::kUninitialized);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t column = local[static_cast<size_t>(b)];
      sampled.data<int64_t>()[b] = column >= 0 ? position[static_cast<size_t>(column)] : -1;
    }
  }

 private:
  int64_t classes_;
  int64_t num_sample_;
  uint64_t seed_;
  std::atomic<uint64_t> runs_{0};
};

}  // namespace

void register_class_center_sampling_schemas(OpRegistry& registry) {
  OpSchema sample("SampleClassCenters");
  sample.input("local_labels", "I")
      .output("columns", "I")
      .output("sampled_labels", "I")
      .type_constraint("I", {DType::kInt64})
      .required_attr("classes", AttrType::kInt)
      .required_attr("num_sample", AttrType::kInt)
      .attr("seed", AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        const int64_t classes = ctx.attr_int("classes"), num_sample = ctx.attr_int("num_sample");
        if (classes < 1) ctx.fail("classes must be positive, got " + std::to_string(classes));
        if (num_sample < 1) ctx.fail("num_sample must be positive, got " + std::to_string(num_sample));
        const TensorType* labels = ctx.input_type(0);
        if (labels == nullptr) return;
        if (labels->shape.has_rank() && labels->shape.rank() != 1) {
          ctx.fail("local_labels must be [batch], got " + labels->shape.to_string());
        }
        ctx.set_output_type(0, {DType::kInt64, Shape{num_sample}});
        ctx.set_output_type(1, *labels);
      })
      .doc("PartialFC: num_sample distinct columns of this rank's shard of the classes, ascending: every labelled "
           "one, then random others (padding columns last, only when the shard is smaller), and each label's "
           "position among them (-1: another rank's class)");
  registry.add(std::move(sample));
}

void register_class_center_sampling_cpu_kernels(KernelRegistry& registry) {
  registry.add("SampleClassCenters", DeviceType::kCpu, {DType::kInt64},
               [](const Node& node) { return std::make_unique<SampleClassCentersKernel>(node); });
}

}  // namespace weir
