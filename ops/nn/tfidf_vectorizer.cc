#include "ops/nn/tfidf_vectorizer.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/graph.h"

namespace weir {

namespace {

enum class TfIdfMode { kTf, kIdf, kTfIdf };

// The pool as a trie over items: node 0 is the root; a node's `entries` are
// the pool entries (positions in ngram_indexes) whose n-gram ends there
// (more than one when the pool repeats an n-gram).
struct TrieNode {
  std::unordered_map<int64_t, size_t> children;
  std::vector<size_t> entries;
};

struct TfIdfConfig {
  int64_t min_gram = 1, max_gram = 1, max_skip = 0;
  TfIdfMode mode = TfIdfMode::kTf;
  std::vector<TrieNode> trie;
  std::vector<int64_t> indexes;  // output coordinate of each pool entry
  std::vector<double> weights;   // one per pool entry (all 1 by default)
  int64_t output_size = 0;
};

// Reads and checks the node's attributes into `config`; returns the problem,
// or "" when they are consistent.
std::string parse_config(const Node& node, TfIdfConfig& config) {
  if (node.has_attr("pool_strings")) {
    return "pool_strings is not supported (Weir has no string tensors); only pool_int64s with int32/int64 input";
  }
  for (const char* name : {"max_gram_length", "min_gram_length", "max_skip_count", "mode", "ngram_counts", "ngram_indexes"}) {
    if (!node.has_attr(name)) return std::string("missing required attribute ") + name;
  }
  if (!node.has_attr("pool_int64s")) return "needs the pool_int64s attribute";
  config.min_gram = node.attr("min_gram_length").i();
  config.max_gram = node.attr("max_gram_length").i();
  config.max_skip = node.attr("max_skip_count").i();
  if (config.min_gram < 1 || config.max_gram < config.min_gram) {
    return "min_gram_length " + std::to_string(config.min_gram) + " and max_gram_length " +
           std::to_string(config.max_gram) + " must satisfy 1 <= min_gram_length <= max_gram_length";
  }
  if (config.max_skip < 0) return "max_skip_count must not be negative, got " + std::to_string(config.max_skip);
  const std::string& mode = node.attr("mode").s();
  if (mode == "TF") config.mode = TfIdfMode::kTf;
  else if (mode == "IDF") config.mode = TfIdfMode::kIdf;
  else if (mode == "TFIDF") config.mode = TfIdfMode::kTfIdf;
  else return "mode '" + mode + "' is not one of TF, IDF, TFIDF";

  const std::vector<int64_t>& pool = node.attr("pool_int64s").ints();
  const std::vector<int64_t>& counts = node.attr("ngram_counts").ints();
  config.indexes = node.attr("ngram_indexes").ints();
  auto pool_size = static_cast<int64_t>(pool.size());
  config.trie.assign(1, TrieNode{});
  size_t entry = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    int64_t begin = counts[k];
    int64_t end = k + 1 < counts.size() ? counts[k + 1] : pool_size;
    auto n = static_cast<int64_t>(k + 1);
    if ((k == 0 && begin != 0) || begin < 0 || end < begin || end > pool_size) {
      return "ngram_counts must start at 0 and rise to at most the pool size " + std::to_string(pool_size) +
             ", got " + std::to_string(begin) + " then " + std::to_string(end) + " at position " + std::to_string(k);
    }
    if ((end - begin) % n != 0) {
      return "the " + std::to_string(n) + "-grams of pool_int64s span " + std::to_string(end - begin) +
             " items, not a multiple of " + std::to_string(n) + " (check ngram_counts)";
    }
    for (int64_t start = begin; start < end; start += n, ++entry) {
      size_t at = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t item = pool[static_cast<size_t>(start + j)];
        auto found = config.trie[at].children.find(item);
        if (found == config.trie[at].children.end()) {
          config.trie.emplace_back();
          found = config.trie[at].children.emplace(item, config.trie.size() - 1).first;
        }
        at = found->second;
      }
      config.trie[at].entries.push_back(entry);
    }
  }
  if (counts.empty() && !pool.empty()) return "ngram_counts is empty but pool_int64s holds " + std::to_string(pool.size()) + " items";
  if (entry != config.indexes.size()) {
    return "pool_int64s and ngram_counts give " + std::to_string(entry) + " n-grams but ngram_indexes has " +
           std::to_string(config.indexes.size()) + " elements";
  }
  for (int64_t index : config.indexes) {
    if (index < 0) return "ngram_indexes must not be negative, got " + std::to_string(index);
    config.output_size = std::max(config.output_size, index + 1);
  }
  config.weights.assign(entry, 1.0);
  if (node.has_attr("weights")) {
    const std::vector<double>& weights = node.attr("weights").floats();
    if (!weights.empty()) {
      if (weights.size() != entry) {
        return "weights has " + std::to_string(weights.size()) + " elements, ngram_indexes " + std::to_string(entry);
      }
      config.weights = weights;
    }
  }
  return "";
}

void infer_tfidf_vectorizer(InferenceContext& ctx) {
  TfIdfConfig config;
  if (std::string problem = parse_config(ctx.node(), config); !problem.empty()) ctx.fail(problem);
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (!x->shape.has_rank()) {
    ctx.set_output_type(0, {DType::kFloat32, Shape::unknown_rank()});
    return;
  }
  if (x->shape.rank() != 1 && x->shape.rank() != 2) ctx.fail("X " + x->shape.to_string() + " must be [C] or [N, C]");
  std::vector<Dim> dims;
  if (x->shape.rank() == 2) dims.push_back(x->shape.dims()[0]);
  dims.emplace_back(config.output_size);
  ctx.set_output_type(0, {DType::kFloat32, Shape(std::move(dims))});
}

class TfIdfVectorizerKernel final : public OpKernel {
 public:
  explicit TfIdfVectorizerKernel(const Node& node) {
    if (std::string problem = parse_config(node, config_); !problem.empty()) {
      throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': " + problem).with_node(node.name());
    }
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t>& sizes = x.sizes();
    if (sizes.size() != 1 && sizes.size() != 2) ctx.fail("X " + x.type_string() + " must be [C] or [N, C]");
    if (x.dtype() != DType::kInt32 && x.dtype() != DType::kInt64) ctx.fail("X " + x.type_string() + " must be int32 or int64");
    int64_t rows = sizes.size() == 2 ? sizes[0] : 1;
    int64_t columns = sizes.back();
    std::vector<int64_t> out_sizes = sizes.size() == 2 ? std::vector<int64_t>{rows, config_.output_size}
                                                       : std::vector<int64_t>{config_.output_size};
    Tensor& y = ctx.allocate_output(0, DType::kFloat32, out_sizes, KernelContext::Fill::kZeros);
    auto* out = y.data<float>();
    std::vector<int64_t> row(static_cast<size_t>(columns));
    std::vector<int64_t> counts(config_.indexes.size());
    std::vector<double> values(static_cast<size_t>(config_.output_size));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < columns; ++c) {
        auto flat = static_cast<size_t>(r * columns + c);
        row[static_cast<size_t>(c)] = x.dtype() == DType::kInt32 ? int64_t{x.data<int32_t>()[flat]} : x.data<int64_t>()[flat];
      }
      std::fill(counts.begin(), counts.end(), 0);
      count_row(row, counts);
      std::fill(values.begin(), values.end(), 0.0);
      for (size_t e = 0; e < counts.size(); ++e) {
        if (counts[e] == 0) continue;
        double count = static_cast<double>(counts[e]);
        double value = config_.mode == TfIdfMode::kTf    ? count
                       : config_.mode == TfIdfMode::kIdf ? config_.weights[e]
                                                         : count * config_.weights[e];
        values[static_cast<size_t>(config_.indexes[e])] += value;
      }
      for (size_t i = 0; i < values.size(); ++i) {
        out[static_cast<size_t>(r * config_.output_size) + i] = static_cast<float>(values[i]);
      }
    }
  }

 private:
  // Adds to `counts` each pool entry's occurrences in `row`: items at
  // start + j·(skip + 1), lengths min..max; unigrams only with skip 0.
  void count_row(const std::vector<int64_t>& row, std::vector<int64_t>& counts) const {
    auto columns = static_cast<int64_t>(row.size());
    for (int64_t skip = 0; skip <= config_.max_skip; ++skip) {
      if (skip > 0 && config_.max_gram < 2) break;
      int64_t step = skip + 1;
      // Past this many items no n-gram of length 2 fits at this skip.
      if (skip > 0 && step >= columns) break;
      for (int64_t start = 0; start < columns; ++start) {
        size_t at = 0;
        for (int64_t n = 1; n <= config_.max_gram; ++n) {
          int64_t position = start + (n - 1) * step;
          if (position >= columns) break;
          auto found = config_.trie[at].children.find(row[static_cast<size_t>(position)]);
          if (found == config_.trie[at].children.end()) break;
          at = found->second;
          if (n >= config_.min_gram && (n > 1 || skip == 0)) {
            for (size_t entry : config_.trie[at].entries) ++counts[entry];
          }
        }
      }
    }
  }

  TfIdfConfig config_;
};

}  // namespace

void register_tfidf_vectorizer_schema(OpRegistry& registry) {
  OpSchema schema("TfIdfVectorizer");
  schema.input("X", "T").output("Y", "T1")
      .type_constraint("T", {DType::kInt32, DType::kInt64})
      .type_constraint("T1", {DType::kFloat32})
      .required_attr("max_gram_length", AttrType::kInt)
      .required_attr("max_skip_count", AttrType::kInt)
      .required_attr("min_gram_length", AttrType::kInt)
      .required_attr("mode", AttrType::kString)
      .required_attr("ngram_counts", AttrType::kInts)
      .required_attr("ngram_indexes", AttrType::kInts)
      .attr("pool_int64s", AttrType::kInts)
      .attr("pool_strings", AttrType::kStrings)
      .attr("weights", AttrType::kFloats)
      .infer(infer_tfidf_vectorizer)
      .doc("n-gram (with skips) counts of each row of X against pool_int64s, as TF, IDF or TFIDF; f32 [max(ngram_indexes) + 1] per row");
  registry.add(std::move(schema));
}

void register_tfidf_vectorizer_cpu_kernel(KernelRegistry& registry) {
  registry.add("TfIdfVectorizer", DeviceType::kCpu, {DType::kInt32, DType::kInt64},
               [](const Node& node) { return std::make_unique<TfIdfVectorizerKernel>(node); });
}

}  // namespace weir
