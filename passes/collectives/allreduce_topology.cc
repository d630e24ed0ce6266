#include "passes/collectives/allreduce_topology.h"

#include "core/error.h"
#include "core/type_inference.h"

namespace weir {

namespace {

bool is_bucket_allreduce(const Node& node) {
  return node.op_type() == "AllReduce" && node.domain().empty() && node.has_attr("tag") &&
         node.attr("tag").s().rfind("dp/bucket", 0) == 0;
}

}  // namespace

bool AllreduceTopology::run(Graph& graph, PassContext& context) {
  const int rows = options_.rows, cols = options_.cols;
  if (rows < 1 || cols < 1) {
    throw Error(ErrorKind::kInvalidArgument, "allreduce topology: a grid of " + std::to_string(rows) + " x " +
                                                 std::to_string(cols) + " ranks; both must be at least 1");
  }
  rewritten_ = 0;
  if (rows == 1 || cols == 1) return false;  // a single row or column is the flat AllReduce
  // The partitions: ranks of a row are consecutive; a column's are cols apart.
  std::vector<int64_t> by_row, by_column;
  for (int r = 0; r < rows * cols; ++r) by_row.push_back(r);
  for (int c = 0; c < cols; ++c) {
    for (int r = 0; r < rows; ++r) by_column.push_back(static_cast<int64_t>(r) * cols + c);
  }
  const Attribute avg(std::string("avg"));
  for (Node* node : graph.nodes()) {
    if (!is_bucket_allreduce(*node)) continue;
    if (node->has_attr("group") && !node->attr("group").ints().empty()) continue;  // already over a subgroup
    Value* bucket = node->input(0);
    const Shape& shape = bucket->shape();
    if (!shape.is_static() || shape.rank() != 1 || shape.num_elements() % cols != 0) {
      throw Error(ErrorKind::kInvalidGraph, "allreduce topology: bucket AllReduce '" + node->name() + "' averages " +
                                                bucket->type().to_string() + ", not a 1-D length dividing by the " +
                                                std::to_string(cols) + " ranks of a row (pad the buckets to it)")
          .with_node(node->name());
    }
    const std::string tag = node->attr("tag").s();
    auto add = [&](const std::string& op, Value* input, std::map<std::string, Attribute> attributes,
                   const std::string& suffix) {
      Node* added = graph.add_node(op, {input}, 1, std::move(attributes), graph.unique_name(tag + suffix));
      added->set_device(node->device());
      added->set_stream(node->stream());
      infer_node_types(*added, context.registry());
      return added->output(0);
    };
    const Attribute row_group(by_row), column_group(by_column);
    Value* shard = add("ReduceScatter", bucket,
                       {{"reduction", avg}, {"group", row_group}, {"group_size", Attribute(int64_t{cols})},
                        {"tag", Attribute(tag + "/row_reduce_scatter")}},
                       "/row_reduce_scatter");
    Value* reduced = add("AllReduce", shard,
                         {{"reduction", avg}, {"group", column_group}, {"group_size", Attribute(int64_t{rows})},
                          {"tag", Attribute(tag + "/column_allreduce")}},
                         "/column_allreduce");
    Value* gathered = add("AllGather", reduced,
                          {{"group", row_group}, {"group_size", Attribute(int64_t{cols})},
                           {"tag", Attribute(tag + "/row_allgather")}},
                          "/row_allgather");
    Value* result = node->output(0);
    const std::string name = result->name();
    graph.replace_all_uses(result, gathered);
    graph.remove_node(node);
    graph.rename_value(gathered, name);
    ++rewritten_;
  }
  return rewritten_ > 0;
}

}  // namespace weir
