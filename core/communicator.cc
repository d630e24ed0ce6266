#include "core/communicator.h"

#include <algorithm>

#include "core/error.h"

namespace weir {

ReduceOp parse_reduce_op(std::string_view name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "avg") return ReduceOp::kAvg;
  if (name == "max") return ReduceOp::kMax;
  if (name == "min") return ReduceOp::kMin;
  throw Error(ErrorKind::kInvalidArgument,
              "unknown reduction '" + std::string(name) + "': expected sum, avg, max or min");
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "?";
}

Tensor Communicator::all_gather(const Tensor& input, const std::string& tag) {
  Tensor output = Tensor::uninitialized(input.dtype(), all_gather_sizes(input.sizes(), size()));
  all_gather(input, output, {.tag = tag});
  return output;
}

Tensor Communicator::reduce_scatter(const Tensor& input, ReduceOp op, const std::string& tag) {
  Tensor output = Tensor::uninitialized(input.dtype(), reduce_scatter_sizes(input.sizes(), size()));
  reduce_scatter(input, output, op, {.tag = tag});
  return output;
}

void Communicator::check_rank(int r, const char* what) const {
  if (r < 0 || r >= size()) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + " " + std::to_string(r) + " is not a rank of a group of " +
                                                 std::to_string(size()))
        .with_rank(rank());
  }
}

void Communicator::check_output(const Tensor& input, const Tensor& output, const std::vector<int64_t>& sizes,
                                const char* what, const CommCall& call) const {
  if (!input.defined() || !output.defined()) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + " with tag '" + call.tag + "': an undefined tensor")
        .with_rank(rank());
  }
  if (output.dtype() != input.dtype() || output.sizes() != sizes) {
    std::string shape = std::string(dtype_name(input.dtype())) + "[";
    for (size_t i = 0; i < sizes.size(); ++i) shape += (i ? "," : "") + std::to_string(sizes[i]);
    throw Error(ErrorKind::kShape, std::string(what) + " with tag '" + call.tag + "': the output is " +
                                       output.type_string() + ", expected " + shape + "]")
        .with_rank(rank());
  }
}

int Communicator::subgroup_position(const std::vector<int>& ranks) const {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (ranks.empty() || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw Error(ErrorKind::kInvalidArgument, "a subgroup needs distinct ranks, at least one").with_rank(rank());
  }
  for (int r : ranks) check_rank(r, "subgroup member");
  auto position = std::find(ranks.begin(), ranks.end(), rank());
  if (position == ranks.end()) {
    throw Error(ErrorKind::kInvalidArgument, "rank " + std::to_string(rank()) + " is not in the subgroup it asked for")
        .with_rank(rank());
  }
  return static_cast<int>(position - ranks.begin());
}

std::vector<int64_t> Communicator::all_gather_sizes(const std::vector<int64_t>& input, int size) {
  std::vector<int64_t> sizes = input.empty() ? std::vector<int64_t>{1} : input;
  sizes[0] *= size;
  return sizes;
}

std::vector<int64_t> Communicator::reduce_scatter_sizes(const std::vector<int64_t>& input, int size) {
  if (input.empty() || size < 1 || input[0] % size != 0) {
    std::string shape = "[";
    for (size_t i = 0; i < input.size(); ++i) shape += (i ? "," : "") + std::to_string(input[i]);
    throw Error(ErrorKind::kShape, "reduce_scatter: axis 0 of " + shape + "] does not divide by the group size " +
                                       std::to_string(size));
  }
  std::vector<int64_t> sizes = input;
  sizes[0] /= size;
  return sizes;
}

}  // namespace weir
