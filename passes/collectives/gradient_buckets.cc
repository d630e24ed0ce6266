#include "passes/collectives/gradient_buckets.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "core/type_inference.h"

namespace weir {

namespace {

bool is_data_parallel_allreduce(const Node& node) {
  return node.op_type() == "AllReduce" && node.domain().empty() && node.has_attr("tag") &&
         node.attr("tag").s().rfind("dp/", 0) == 0;
}

bool is_graph_output(const Graph& graph, const Value* value) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), value) != graph.outputs().end();
}

// One averaged value on its way into a bucket.
struct Member {
  Node* allreduce = nullptr;
  Value* averaged = nullptr;  // the AllReduce's output, which the tail reads
  Value* source = nullptr;    // what enters the bucket: the value, or the input of AMP's Cast up
  Node* moved_cast = nullptr; // that Cast, when the source is its input
  int64_t elements = 0;
  int position = 0;           // of the value's producer in the topological order
};

struct Bucket {
  std::vector<Member> members;
  DType dtype = DType::kFloat32;  // as communicated
  DType result = DType::kFloat32; // what the tail reads
  int64_t elements = 0;
  int ready = 0;                  // the last member's position
};

std::string stream_name(int index) { return index == 0 ? std::string("comm") : "comm:" + std::to_string(index); }

class Rewrite {
 public:
  Rewrite(Graph& graph, const GradientBucketOptions& options, const OpRegistry& registry)
      : graph_(graph), options_(options), registry_(registry) {}

  GradientBucketResult run() {
    if (options_.comm_streams < 1) {
      throw Error(ErrorKind::kInvalidArgument,
                  "gradient buckets: comm_streams must be at least 1, got " + std::to_string(options_.comm_streams));
    }
    if (options_.pad_to_multiple < 1) {
      throw Error(ErrorKind::kInvalidArgument, "gradient buckets: pad_to_multiple must be at least 1, got " +
                                                   std::to_string(options_.pad_to_multiple));
    }
    if (options_.dtype != DType::kFloat32 && options_.dtype != DType::kFloat16 && options_.dtype != DType::kBFloat16) {
      throw Error(ErrorKind::kInvalidArgument, "gradient buckets: the allreduce dtype must be f32, f16 or bf16, got " +
                                                   std::string(dtype_name(options_.dtype)));
    }
    std::vector<Bucket> buckets = fill(collect());
    std::sort(buckets.begin(), buckets.end(), [](const Bucket& a, const Bucket& b) { return a.ready < b.ready; });
    // Without overlap every bucket waits for the whole backward pass: a
    // control edge from each producer of any bucketed gradient.
    std::vector<Node*> producers;
    if (!options_.overlap) {
      for (const Bucket& bucket : buckets) {
        for (const Member& member : bucket.members) {
          if (Node* producer = member.source->producer(); producer != nullptr) producers.push_back(producer);
        }
      }
    }
    GradientBucketResult result;
    for (size_t i = 0; i < buckets.size(); ++i) result.buckets.push_back(emit(buckets[i], static_cast<int>(i)));
    if (!options_.overlap) {
      for (const GradientBucket& bucket : result.buckets) {
        Node* allreduce = graph_.find_node(bucket.allreduce);
        for (Node* producer : producers) {
          if (producer != allreduce) allreduce->add_control_input(producer);
        }
      }
    }
    result.moved_casts = moved_;
    result.added_casts = added_;
    result.allreduce_bytes = data_parallel_allreduce_bytes(graph_);
    return result;
  }

 private:
  // The data-parallel AllReduces to bucket, in the order their values are produced.
  std::vector<Member> collect() {
    std::vector<Node*> order = graph_.topological_order();
    std::unordered_map<const Node*, int> position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
    std::vector<Member> members;
    for (Node* node : order) {
      if (!is_data_parallel_allreduce(*node) || node->num_inputs() != 1 || node->num_outputs() != 1) continue;
      Value* value = node->input(0);
      Value* averaged = node->output(0);
      if (is_graph_output(graph_, averaged) || !is_floating(value->dtype()) || !value->shape().is_static()) continue;
      if (node->attr("reduction").s() != "avg") continue;
      Member member;
      member.allreduce = node;
      member.averaged = averaged;
      member.source = value;
      member.elements = value->shape().num_elements();
      member.position = value->producer() != nullptr ? position[value->producer()] : -1;
      const DType comm = communicated(value->dtype());
      Node* producer = value->producer();
      if (comm != value->dtype() && producer != nullptr && producer->op_type() == "Cast" && producer->domain().empty() &&
          producer->input(0)->dtype() == comm && value->uses().size() == 1 && !is_graph_output(graph_, value)) {
        member.source = producer->input(0);
        member.moved_cast = producer;
      }
      members.push_back(member);
    }
    std::stable_sort(members.begin(), members.end(),
                     [](const Member& a, const Member& b) { return a.position < b.position; });
    return members;
  }

  DType communicated(DType dtype) const { return options_.dtype == DType::kFloat32 ? dtype : options_.dtype; }

  // Fills buckets in production order, one open bucket per (dtype read,
  // dtype communicated); a bucket closes when it reaches its limit.
  std::vector<Bucket> fill(const std::vector<Member>& members) const {
    std::vector<Bucket> closed;
    std::map<std::pair<DType, DType>, Bucket> open;
    std::map<std::pair<DType, DType>, int> count;
    for (const Member& member : members) {
      const DType result = member.averaged->dtype(), comm = communicated(result);
      const auto key = std::make_pair(result, comm);
      Bucket& bucket = open[key];
      bucket.dtype = comm;
      bucket.result = result;
      bucket.members.push_back(member);
      bucket.elements += member.elements;
      bucket.ready = member.position;
      const int64_t limit = count[key] == 0 ? options_.first_bucket_bytes : options_.bucket_bytes;
      if (bucket.elements * static_cast<int64_t>(dtype_size(comm)) >= limit) {
        closed.push_back(std::move(bucket));
        open.erase(key);
        ++count[key];
      }
    }
    for (auto& [key, bucket] : open) closed.push_back(std::move(bucket));
    return closed;
  }

  // `device`: the bucket's (the rank's), copied, since the AllReduces it
  // came from are removed while the bucket is built.
  Node* add(const std::string& op, const std::vector<Value*>& inputs, size_t outputs,
            std::map<std::string, Attribute> attributes, const std::string& name, const std::optional<Device>& device) {
    Node* node = graph_.add_node(op, inputs, outputs, std::move(attributes), graph_.unique_name(name));
    node->set_device(device);
    infer_node_types(*node, registry_);
    return node;
  }

  Value* shape_constant(const std::string& name, const std::vector<int64_t>& dims) {
    Tensor tensor(DType::kInt64, {static_cast<int64_t>(dims.size())});
    if (!dims.empty()) std::memcpy(tensor.raw_data(), dims.data(), dims.size() * sizeof(int64_t));
    return graph_.add_constant(graph_.unique_name(name), std::move(tensor));
  }

  Value* cast(Value* value, DType to, const std::string& name, const std::optional<Device>& device) {
    ++added_;
    return add("Cast", {value}, 1, {{"to", Attribute(static_cast<int64_t>(to))}}, name, device)->output(0);
  }

  GradientBucket emit(Bucket& bucket, int index) {
    const std::string prefix = "dp/bucket" + std::to_string(index);
    const std::optional<Device> device = bucket.members.front().allreduce->device();
    const std::string stream = stream_name(index % options_.comm_streams);
    GradientBucket described;
    described.elements = bucket.elements;
    described.dtype = bucket.dtype;
    described.stream = stream;
    for (const Member& member : bucket.members) described.values.push_back(member.allreduce->input(0)->name());

    // A lone value that needs no cast and no padding keeps its AllReduce.
    if (bucket.members.size() == 1 && options_.pad_to_multiple == 1 && bucket.dtype == bucket.result &&
        bucket.members.front().moved_cast == nullptr) {
      Node* allreduce = bucket.members.front().allreduce;
      allreduce->set_stream(stream);
      described.allreduce = allreduce->name();
      return described;
    }

    std::vector<Value*> parts;
    std::vector<int64_t> sizes;
    std::vector<size_t> part_of_member;
    for (size_t i = 0; i < bucket.members.size(); ++i) {
      const Member& member = bucket.members[i];
      Value* flat = add("Reshape", {member.source, flat_shape()}, 1, {}, prefix + "/flatten", device)->output(0);
      if (flat->dtype() != bucket.dtype) flat = cast(flat, bucket.dtype, prefix + "/cast", device);
      part_of_member.push_back(parts.size());
      parts.push_back(flat);
      sizes.push_back(member.elements);
      if (const int64_t gap = i + 1 < bucket.members.size() ? gap_after(member.elements, bucket.dtype) : 0; gap > 0) {
        parts.push_back(zeros(bucket.dtype, gap, prefix + "/gap"));
        sizes.push_back(gap);
        described.gap_elements += gap;
      }
    }
    const int64_t length = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
    const int64_t padded = (length + options_.pad_to_multiple - 1) / options_.pad_to_multiple * options_.pad_to_multiple;
    described.elements = padded;
    if (padded > length) {
      parts.push_back(zeros(bucket.dtype, padded - length, prefix + "/padding"));
      sizes.push_back(padded - length);
    }
    Value* packed = parts.size() == 1 ? parts.front()
                                      : add("Concat", parts, 1, {{"axis", Attribute(int64_t{0})}}, prefix + "/pack", device)->output(0);
    Node* allreduce = add("AllReduce", {packed}, 1,
                          {{"reduction", Attribute(std::string("avg"))}, {"tag", Attribute(prefix)}}, prefix + "/allreduce", device);
    allreduce->set_stream(stream);
    described.allreduce = allreduce->name();
    Value* reduced = allreduce->output(0);
    if (bucket.result != bucket.dtype) reduced = cast(reduced, bucket.result, prefix + "/cast_back", device);
    std::vector<Value*> pieces = {reduced};
    if (sizes.size() > 1) {
      pieces = add("Split", {reduced, shape_constant(prefix + "/sizes", sizes)}, sizes.size(),
                   {{"axis", Attribute(int64_t{0})}}, prefix + "/unpack", device)
                   ->outputs();
    }
    for (size_t i = 0; i < bucket.members.size(); ++i) {
      const Member& member = bucket.members[i];
      const std::vector<int64_t> dims = member.averaged->shape().sizes();
      Value* restored =
          add("Reshape", {pieces[part_of_member[i]], shape_constant(prefix + "/shape", dims)}, 1, {}, prefix + "/unflatten", device)->output(0);
      const std::string name = member.averaged->name();
      graph_.replace_all_uses(member.averaged, restored);
      graph_.remove_node(member.allreduce);
      graph_.rename_value(restored, name);
      if (member.moved_cast != nullptr && member.moved_cast->output(0)->uses().empty() &&
          !is_graph_output(graph_, member.moved_cast->output(0))) {
        graph_.remove_node(member.moved_cast);
        ++moved_;
      }
    }
    return described;
  }

  // Zeros after a member so the next one starts at a multiple of
  // `align_bytes` in its bucket: the memory planner places a gradient inside
  // its bucket only at an aligned offset.
  int64_t gap_after(int64_t elements, DType dtype) const {
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    if (options_.align_bytes <= element || options_.align_bytes % element != 0) return 0;
    const int64_t bytes = elements * element;
    return (options_.align_bytes - bytes % options_.align_bytes) % options_.align_bytes / element;
  }

  // A zero constant, one per dtype and length.
  Value* zeros(DType dtype, int64_t elements, const std::string& name) {
    Value*& value = zeros_[{dtype, elements}];
    if (value == nullptr) {
      Tensor tensor(dtype, {elements});
      std::memset(tensor.raw_data(), 0, tensor.nbytes());
      value = graph_.add_constant(graph_.unique_name(name), std::move(tensor));
    }
    return value;
  }

  Value* flat_shape() {
    if (flat_shape_ == nullptr) flat_shape_ = shape_constant("dp/flat_shape", {-1});
    return flat_shape_;
  }

  Graph& graph_;
  const GradientBucketOptions& options_;
  const OpRegistry& registry_;
  Value* flat_shape_ = nullptr;
  std::map<std::pair<DType, int64_t>, Value*> zeros_;
  int moved_ = 0;
  int added_ = 0;
};

}  // namespace

int64_t data_parallel_allreduce_bytes(const Graph& graph) {
  int64_t bytes = 0;
  for (const Node* node : graph.nodes()) {
    if (!is_data_parallel_allreduce(*node) || node->num_inputs() < 1) continue;
    const Value* value = node->input(0);
    if (value->shape().is_static()) bytes += value->shape().num_elements() * static_cast<int64_t>(dtype_size(value->dtype()));
  }
  return bytes;
}

bool GradientBuckets::run(Graph& graph, PassContext& context) {
  result_ = Rewrite(graph, options_, context.registry()).run();
  return !result_.buckets.empty();
}

}  // namespace weir
