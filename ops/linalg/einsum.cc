#include "ops/linalg/einsum.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/linalg/dnnl_matmul.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

// Labels: a letter is its ASCII code (so sorting labels sorts letters as
// ASCII does); the j-th axis that "..." stands for is kEllipsis + j.
constexpr int kEllipsis = 128;

// Calls with a message and must throw (a context's fail).
using EinsumFail = std::function<void(const std::string&)>;

std::string label_name(int label) {
  return label < kEllipsis ? std::string(1, static_cast<char>(label)) : "... axis " + std::to_string(label - kEllipsis);
}

struct EinsumTerm {
  std::vector<int> letters;
  int64_t ellipsis_at = -1;  // where "..." stands among the letters; -1 for none
};

struct ParsedEinsum {
  std::vector<EinsumTerm> inputs;
  EinsumTerm output;
  bool explicit_output = false;
};

EinsumTerm parse_term(const std::string& term, const std::string& what, const EinsumFail& fail) {
  EinsumTerm parsed;
  for (size_t i = 0; i < term.size();) {
    char c = term[i];
    if (c == '.') {
      if (term.compare(i, 3, "...") != 0 || parsed.ellipsis_at >= 0) {
        fail(what + " \"" + term + "\" has a '.' outside a single \"...\"");
      }
      parsed.ellipsis_at = static_cast<int64_t>(parsed.letters.size());
      i += 3;
    } else if (std::isalpha(static_cast<unsigned char>(c)) != 0) {
      parsed.letters.push_back(static_cast<unsigned char>(c));
      ++i;
    } else {
      fail(what + " \"" + term + "\" has the character '" + std::string(1, c) + "'");
    }
  }
  return parsed;
}

ParsedEinsum parse_einsum(const std::string& equation, size_t num_inputs, const EinsumFail& fail) {
  std::string text;
  for (char c : equation) {
    if (c != ' ') text += c;
  }
  ParsedEinsum parsed;
  std::string lhs = text;
  size_t arrow = text.find("->");
  if (arrow != std::string::npos) {
    lhs = text.substr(0, arrow);
    std::string rhs = text.substr(arrow + 2);
    if (rhs.find("->") != std::string::npos || rhs.find(',') != std::string::npos) {
      fail("equation \"" + equation + "\" must have one output term after a single \"->\"");
    }
    parsed.output = parse_term(rhs, "output term", fail);
    parsed.explicit_output = true;
  }
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  if (terms.size() != num_inputs) {
    fail("equation \"" + equation + "\" has " + std::to_string(terms.size()) + " input terms for " +
         std::to_string(num_inputs) + " inputs");
  }
  for (size_t i = 0; i < terms.size(); ++i) parsed.inputs.push_back(parse_term(terms[i], "input term " + std::to_string(i), fail));
  return parsed;
}

// The equation against the inputs' ranks: every input axis's label and the output's labels.
struct EinsumPlan {
  std::vector<std::vector<int>> operand_labels;
  std::vector<int> output_labels;
  int num_labels = kEllipsis;  // labels are < num_labels
};

std::vector<int> expand_term(const EinsumTerm& term, int64_t ellipsis_rank, int64_t first_ellipsis_label) {
  std::vector<int> labels;
  auto at = static_cast<size_t>(term.ellipsis_at < 0 ? static_cast<int64_t>(term.letters.size()) : term.ellipsis_at);
  labels.insert(labels.end(), term.letters.begin(), term.letters.begin() + static_cast<std::ptrdiff_t>(at));
  if (term.ellipsis_at >= 0) {
    for (int64_t j = 0; j < ellipsis_rank; ++j) labels.push_back(static_cast<int>(first_ellipsis_label + j));
  }
  labels.insert(labels.end(), term.letters.begin() + static_cast<std::ptrdiff_t>(at), term.letters.end());
  return labels;
}

EinsumPlan plan_einsum(const ParsedEinsum& parsed, const std::vector<int64_t>& ranks, const EinsumFail& fail) {
  EinsumPlan plan;
  int64_t ellipsis_rank = 0;
  std::vector<int64_t> own(ranks.size(), 0);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const EinsumTerm& term = parsed.inputs[i];
    auto letters = static_cast<int64_t>(term.letters.size());
    if (term.ellipsis_at >= 0 ? ranks[i] < letters : ranks[i] != letters) {
      fail("input " + std::to_string(i) + " has rank " + std::to_string(ranks[i]) + ", but its term has " +
           std::to_string(letters) + " subscripts" + (term.ellipsis_at >= 0 ? " and \"...\"" : ""));
    }
    own[i] = ranks[i] - letters;
    ellipsis_rank = std::max(ellipsis_rank, own[i]);
  }
  plan.num_labels = kEllipsis + static_cast<int>(ellipsis_rank);
  std::vector<int> occurrences(static_cast<size_t>(plan.num_labels), 0);
  for (size_t i = 0; i < ranks.size(); ++i) {
    // "..." axes align from the right, as NumPy broadcasting does.
    plan.operand_labels.push_back(expand_term(parsed.inputs[i], own[i], kEllipsis + ellipsis_rank - own[i]));
    for (int label : plan.operand_labels.back()) ++occurrences[static_cast<size_t>(label)];
  }
  if (parsed.explicit_output) {
    std::vector<bool> seen(kEllipsis, false);
    for (int letter : parsed.output.letters) {
      if (seen[static_cast<size_t>(letter)]) fail("output subscript '" + label_name(letter) + "' appears twice");
      if (occurrences[static_cast<size_t>(letter)] == 0) {
        fail("output subscript '" + label_name(letter) + "' appears in no input term");
      }
      seen[static_cast<size_t>(letter)] = true;
    }
    plan.output_labels = expand_term(parsed.output, ellipsis_rank, kEllipsis);
  } else {
    for (int64_t j = 0; j < ellipsis_rank; ++j) plan.output_labels.push_back(static_cast<int>(kEllipsis + j));
    for (int letter = 0; letter < kEllipsis; ++letter) {
      if (occurrences[static_cast<size_t>(letter)] == 1) plan.output_labels.push_back(letter);
    }
  }
  return plan;
}

ParsedEinsum parse_for_node(const Node& node, size_t num_inputs, const EinsumFail& fail) {
  if (!node.has_attr("equation")) fail("needs the equation attribute");
  return parse_einsum(node.attr("equation").s(), num_inputs, fail);
}

// Sizes of every label and each operand's element stride per label (0
// along a broadcast "..." axis of size 1; a letter repeated in a term adds
// its axes' strides, walking the diagonal).
struct EinsumGeometry {
  std::vector<int64_t> sizes;                 // per label; 0 for labels no operand has
  std::vector<int> present;                   // the labels some operand has, ascending
  std::vector<std::vector<int64_t>> strides;  // per operand, per label
  std::vector<int64_t> out_sizes;
};

EinsumGeometry geometry_of(const EinsumPlan& plan, const std::vector<std::vector<int64_t>>& operand_sizes,
                           const EinsumFail& fail) {
  EinsumGeometry g;
  auto labels = static_cast<size_t>(plan.num_labels);
  std::vector<int64_t> sizes(labels, -1);
  for (size_t i = 0; i < operand_sizes.size(); ++i) {
    for (size_t a = 0; a < operand_sizes[i].size(); ++a) {
      auto label = static_cast<size_t>(plan.operand_labels[i][a]);
      int64_t size = operand_sizes[i][a];
      if (sizes[label] < 0) {
        sizes[label] = size;
      } else if (label < kEllipsis) {
        if (sizes[label] != size) {
          fail("subscript '" + label_name(static_cast<int>(label)) + "' has sizes " + std::to_string(sizes[label]) +
               " and " + std::to_string(size) + " (input " + std::to_string(i) + ")");
        }
      } else if (sizes[label] == 1) {
        sizes[label] = size;
      } else if (size != 1 && size != sizes[label]) {
        fail("the \"...\" axes do not broadcast: sizes " + std::to_string(sizes[label]) + " and " + std::to_string(size) +
             " (input " + std::to_string(i) + ")");
      }
    }
  }
  for (size_t label = 0; label < labels; ++label) {
    if (sizes[label] >= 0) g.present.push_back(static_cast<int>(label));
    sizes[label] = std::max<int64_t>(sizes[label], 0);
  }
  g.sizes = sizes;
  for (size_t i = 0; i < operand_sizes.size(); ++i) {
    std::vector<int64_t> strides(labels, 0);
    int64_t stride = 1;
    for (size_t a = operand_sizes[i].size(); a-- > 0;) {
      auto label = static_cast<size_t>(plan.operand_labels[i][a]);
      if (!(operand_sizes[i][a] == 1 && sizes[label] != 1)) strides[label] += stride;
      stride *= operand_sizes[i][a];
    }
    g.strides.push_back(std::move(strides));
  }
  for (int label : plan.output_labels) g.out_sizes.push_back(sizes[static_cast<size_t>(label)]);
  return g;
}

// Arithmetic happens in f64 for floats and in wrapping uint64 for integers.
template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<ComputeType<T>>, double, uint64_t>;

template <typename T>
std::vector<Accumulator<T>> widen(const Tensor& t) {
  std::vector<Accumulator<T>> values(static_cast<size_t>(t.num_elements()));
  const T* data = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_floating_point_v<ComputeType<T>>) {
      values[i] = static_cast<double>(load(data[i]));
    } else if constexpr (std::is_signed_v<T>) {
      values[i] = static_cast<uint64_t>(static_cast<int64_t>(data[i]));
    } else {
      values[i] = static_cast<uint64_t>(data[i]);
    }
  }
  return values;
}

template <typename T>
T narrow(Accumulator<T> value) {
  if constexpr (std::is_floating_point_v<ComputeType<T>>) {
    return store<T>(static_cast<ComputeType<T>>(value));
  } else {
    return static_cast<T>(value);  // modulo 2^bits
  }
}

// Steps an odometer over `labels` (last fastest), moving each offset by its strides.
struct Odometer {
  const std::vector<int>& labels;
  const std::vector<int64_t>& sizes;
  std::vector<int64_t> counter;

  Odometer(const std::vector<int>& l, const std::vector<int64_t>& s) : labels(l), sizes(s), counter(l.size(), 0) {}

  // offsets[k] moves by strides[k][label]; returns false after the last position.
  bool advance(std::vector<int64_t>& offsets, const std::vector<const std::vector<int64_t>*>& strides) {
    for (size_t d = labels.size(); d-- > 0;) {
      auto label = static_cast<size_t>(labels[d]);
      for (size_t k = 0; k < offsets.size(); ++k) offsets[k] += (*strides[k])[label];
      if (++counter[d] < sizes[label]) return true;
      for (size_t k = 0; k < offsets.size(); ++k) offsets[k] -= (*strides[k])[label] * sizes[label];
      counter[d] = 0;
    }
    return false;
  }
};

int64_t product_over(const std::vector<int>& labels, const std::vector<int64_t>& sizes) {
  int64_t count = 1;
  for (int label : labels) count *= sizes[static_cast<size_t>(label)];
  return count;
}

// out[o] = sum over the other labels of the product of the operands.
template <typename Acc>
void contract(const std::vector<std::vector<Acc>>& operands, const EinsumPlan& plan, const EinsumGeometry& g, Acc* out) {
  std::vector<bool> in_output(static_cast<size_t>(plan.num_labels), false);
  for (int label : plan.output_labels) in_output[static_cast<size_t>(label)] = true;
  std::vector<int> summed;
  for (int label : g.present) {
    if (!in_output[static_cast<size_t>(label)]) summed.push_back(label);
  }
  int64_t out_count = product_over(plan.output_labels, g.sizes);
  int64_t sum_count = product_over(summed, g.sizes);  // 0 when a summed axis is empty: zeros
  std::vector<const std::vector<int64_t>*> strides;
  for (const auto& s : g.strides) strides.push_back(&s);
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, sum_count));
  parallel_for(out_count, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> base(operands.size()), offsets(operands.size());
    for (int64_t o = begin; o < end; ++o) {
      std::fill(base.begin(), base.end(), 0);
      int64_t rest = o;
      for (size_t d = plan.output_labels.size(); d-- > 0;) {
        auto label = static_cast<size_t>(plan.output_labels[d]);
        int64_t coordinate = rest % g.sizes[label];
        rest /= g.sizes[label];
        for (size_t k = 0; k < operands.size(); ++k) base[k] += coordinate * g.strides[k][label];
      }
      Acc total = 0;
      offsets = base;
      Odometer odometer(summed, g.sizes);
      for (int64_t r = 0; r < sum_count; ++r) {
        Acc product = operands[0][static_cast<size_t>(offsets[0])];
        for (size_t k = 1; k < operands.size(); ++k) product *= operands[k][static_cast<size_t>(offsets[k])];
        total += product;
        odometer.advance(offsets, strides);
      }
      out[o] = total;
    }
  });
}

// dOperand_i += dY * (the other operands), over every assignment of the labels.
void contract_gradient(const std::vector<std::vector<double>>& operands, const std::vector<double>& dy, size_t i,
                       const EinsumPlan& plan, const EinsumGeometry& g, double* dx) {
  const std::vector<int>& labels = g.present;
  int64_t count = product_over(labels, g.sizes);
  if (count == 0) return;  // an empty axis: no terms
  std::vector<int64_t> dy_strides(static_cast<size_t>(plan.num_labels), 0);
  int64_t stride = 1;
  for (size_t d = plan.output_labels.size(); d-- > 0;) {
    auto label = static_cast<size_t>(plan.output_labels[d]);
    dy_strides[label] = stride;
    stride *= g.sizes[label];
  }
  std::vector<const std::vector<int64_t>*> strides;
  for (const auto& s : g.strides) strides.push_back(&s);
  strides.push_back(&dy_strides);
  std::vector<int64_t> offsets(operands.size() + 1, 0);
  Odometer odometer(labels, g.sizes);
  for (int64_t r = 0; r < count; ++r) {
    double product = dy[static_cast<size_t>(offsets.back())];
    for (size_t k = 0; k < operands.size(); ++k) {
      if (k != i) product *= operands[k][static_cast<size_t>(offsets[k])];
    }
    dx[offsets[i]] += product;
    odometer.advance(offsets, strides);
  }
}

// dst in row-major order over `labels`, read from src through `strides` (per label).
template <typename E>
void permute(const E* src, const std::vector<int>& labels, const std::vector<int64_t>& sizes,
             const std::vector<int64_t>& strides, E* dst) {
  int64_t count = product_over(labels, sizes);
  std::vector<int64_t> offset = {0};
  std::vector<const std::vector<int64_t>*> stride_list = {&strides};
  Odometer odometer(labels, sizes);
  for (int64_t r = 0; r < count; ++r) {
    dst[r] = src[offset[0]];
    odometer.advance(offset, stride_list);
  }
}

// The matrix-product form of a two-operand einsum: labels in order.
struct MatmulForm {
  std::vector<int> batch, m, k, n;
};

std::optional<MatmulForm> matmul_form(const EinsumPlan& plan, const EinsumGeometry& g,
                                      const std::vector<std::vector<int64_t>>& operand_sizes) {
  if (plan.operand_labels.size() != 2) return std::nullopt;
  auto labels = static_cast<size_t>(plan.num_labels);
  std::vector<int> in_a(labels, 0), in_b(labels, 0), in_out(labels, 0);
  for (int label : plan.operand_labels[0]) ++in_a[static_cast<size_t>(label)];
  for (int label : plan.operand_labels[1]) ++in_b[static_cast<size_t>(label)];
  for (int label : plan.output_labels) ++in_out[static_cast<size_t>(label)];
  for (size_t i = 0; i < 2; ++i) {
    for (size_t a = 0; a < operand_sizes[i].size(); ++a) {
      auto label = static_cast<size_t>(plan.operand_labels[i][a]);
      if (operand_sizes[i][a] != g.sizes[label] || operand_sizes[i][a] == 0) return std::nullopt;  // broadcast or empty
    }
  }
  MatmulForm form;
  for (int label : plan.output_labels) {
    auto l = static_cast<size_t>(label);
    if (in_a[l] > 1 || in_b[l] > 1) return std::nullopt;  // a diagonal
    if (in_a[l] == 1 && in_b[l] == 1) form.batch.push_back(label);
    else if (in_a[l] == 1) form.m.push_back(label);
    else form.n.push_back(label);
  }
  for (int label : plan.operand_labels[0]) {
    auto l = static_cast<size_t>(label);
    if (in_out[l] != 0) continue;
    if (in_a[l] != 1 || in_b[l] != 1) return std::nullopt;  // summed in one operand only, or a diagonal
    form.k.push_back(label);
  }
  for (int label : plan.operand_labels[1]) {
    if (in_out[static_cast<size_t>(label)] == 0 && in_a[static_cast<size_t>(label)] == 0) return std::nullopt;
  }
  return form;
}

std::vector<int> concat(std::initializer_list<const std::vector<int>*> parts) {
  std::vector<int> all;
  for (const std::vector<int>* part : parts) all.insert(all.end(), part->begin(), part->end());
  return all;
}

class EinsumKernel final : public OpKernel {
 public:
  explicit EinsumKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    EinsumFail fail = [&](const std::string& message) { ctx.fail(message); };
    size_t n = ctx.num_inputs();
    if (n == 0) ctx.fail("needs at least one input");
    std::vector<std::vector<int64_t>> sizes;
    std::vector<int64_t> ranks;
    DType dtype = ctx.input(0).dtype();
    for (size_t i = 0; i < n; ++i) {
      if (ctx.input(i).dtype() != dtype) {
        ctx.fail("inputs must share one dtype, got " + ctx.input(0).type_string() + " and " + ctx.input(i).type_string());
      }
      sizes.push_back(ctx.input(i).sizes());
      ranks.push_back(ctx.input(i).rank());
    }
    EinsumPlan plan = plan_einsum(parse_for_node(ctx.node(), n, fail), ranks, fail);
    EinsumGeometry g = geometry_of(plan, sizes, fail);
    Tensor& y = ctx.allocate_output(0, dtype, g.out_sizes, KernelContext::Fill::kUninitialized);
    bool supported = false;
    dispatch_dtype(dtype, [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        supported = true;
        if (std::optional<MatmulForm> form = matmul_form(plan, g, sizes)) {
          run_matmul<T>(ctx, plan, g, *form, y);
          return;
        }
        using Acc = Accumulator<T>;
        std::vector<std::vector<Acc>> operands;
        for (size_t i = 0; i < n; ++i) operands.push_back(widen<T>(ctx.input(i)));
        std::vector<Acc> out(static_cast<size_t>(y.num_elements()));
        contract(operands, plan, g, out.data());
        T* dst = y.data<T>();
        for (size_t i = 0; i < out.size(); ++i) dst[i] = narrow<T>(out[i]);
      }
    });
    if (!supported) ctx.fail("supports numeric inputs, got " + ctx.input(0).type_string());
  }

 private:
  // A = input 0 as [batch, m, k], B = input 1 as [batch, k, n], C = A B, then C to the output's order.
  template <typename T>
  void run_matmul(KernelContext& ctx, const EinsumPlan& plan, const EinsumGeometry& g, const MatmulForm& form, Tensor& y) {
    std::vector<int> a_order = concat({&form.batch, &form.m, &form.k});
    std::vector<int> b_order = concat({&form.batch, &form.k, &form.n});
    std::vector<int> c_order = concat({&form.batch, &form.m, &form.n});
    int64_t batch = product_over(form.batch, g.sizes), m = product_over(form.m, g.sizes);
    int64_t k = product_over(form.k, g.sizes), n = product_over(form.n, g.sizes);
    std::vector<T> a(static_cast<size_t>(batch * m * k)), b(static_cast<size_t>(batch * k * n));
    std::vector<T> c(static_cast<size_t>(batch * m * n));
    permute(ctx.input(0).data<T>(), a_order, g.sizes, g.strides[0], a.data());
    permute(ctx.input(1).data<T>(), b_order, g.sizes, g.strides[1], b.data());
    if (DnnlMatmul::supports(DTypeOf<T>::value)) {
      matmul_.run({.dtype = DTypeOf<T>::value, .batch = batch, .m = m, .k = k, .n = n}, a.data(), b.data(), c.data());
    } else {
      using Acc = Accumulator<T>;
      parallel_for(batch * m, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, k * n)), [&](int64_t begin, int64_t end) {
        std::vector<Acc> row(static_cast<size_t>(n));
        for (int64_t bi = begin; bi < end; ++bi) {
          int64_t bb = bi / m;
          std::fill(row.begin(), row.end(), Acc{0});
          for (int64_t kk = 0; kk < k; ++kk) {
            Acc left = widen_one<T>(a[static_cast<size_t>(bi * k + kk)]);
            const T* right = b.data() + (bb * k + kk) * n;
            for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] += left * widen_one<T>(right[j]);
          }
          for (int64_t j = 0; j < n; ++j) c[static_cast<size_t>(bi * n + j)] = narrow<T>(row[static_cast<size_t>(j)]);
        }
      });
    }
    // C's strides per label, then the output in its own label order.
    std::vector<int64_t> c_strides(static_cast<size_t>(plan.num_labels), 0);
    int64_t stride = 1;
    for (size_t d = c_order.size(); d-- > 0;) {
      c_strides[static_cast<size_t>(c_order[d])] = stride;
      stride *= g.sizes[static_cast<size_t>(c_order[d])];
    }
    permute(c.data(), plan.output_labels, g.sizes, c_strides, y.data<T>());
  }

  template <typename T>
  static Accumulator<T> widen_one(T value) {
    if constexpr (std::is_floating_point_v<ComputeType<T>>) {
      return static_cast<double>(load(value));
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<uint64_t>(static_cast<int64_t>(value));
    } else {
      return static_cast<uint64_t>(value);
    }
  }

  DnnlMatmul matmul_;
};

// EinsumGrad(dY, inputs..., operand=i): the gradient of input i.
class EinsumGradKernel final : public OpKernel {
 public:
  explicit EinsumGradKernel(const Node& node) : operand_(node.has_attr("operand") ? node.attr("operand").i() : 0) {}

  void compute(KernelContext& ctx) override {
    EinsumFail fail = [&](const std::string& message) { ctx.fail(message); };
    size_t n = ctx.num_inputs() - 1;
    if (operand_ < 0 || operand_ >= static_cast<int64_t>(n)) {
      ctx.fail("operand " + std::to_string(operand_) + " is not one of the " + std::to_string(n) + " inputs");
    }
    const Tensor& dy = ctx.input(0);
    std::vector<std::vector<int64_t>> sizes;
    std::vector<int64_t> ranks;
    for (size_t i = 0; i < n; ++i) {
      if (ctx.input(i + 1).dtype() != dy.dtype()) {
        ctx.fail("inputs must have dY's dtype, got " + dy.type_string() + " and " + ctx.input(i + 1).type_string());
      }
      sizes.push_back(ctx.input(i + 1).sizes());
      ranks.push_back(ctx.input(i + 1).rank());
    }
    EinsumPlan plan = plan_einsum(parse_for_node(ctx.node(), n, fail), ranks, fail);
    EinsumGeometry g = geometry_of(plan, sizes, fail);
    if (dy.sizes() != g.out_sizes) ctx.fail("dY " + dy.type_string() + " must be the output's " + format_sizes(g.out_sizes));
    auto i = static_cast<size_t>(operand_);
    const Tensor& x = ctx.input(i + 1);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    bool supported = false;
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        supported = true;
        run<T>(ctx, plan, g, i, dx);
      }
    });
    if (!supported) ctx.fail("supports floating-point inputs, got " + dy.type_string());
  }

 private:
  template <typename T>
  static void run(KernelContext& ctx, const EinsumPlan& plan, const EinsumGeometry& g, size_t i, Tensor& dx) {
    std::vector<std::vector<double>> operands;
    for (size_t k = 1; k < ctx.num_inputs(); ++k) operands.push_back(widen<T>(ctx.input(k)));
    std::vector<double> sum(static_cast<size_t>(dx.num_elements()), 0.0);
    contract_gradient(operands, widen<T>(ctx.input(0)), i, plan, g, sum.data());
    T* out = dx.data<T>();
    for (size_t e = 0; e < sum.size(); ++e) out[e] = narrow<T>(sum[e]);
  }

  int64_t operand_;
};

// A label's dim from one more occurrence: static sizes must agree (a "..."
// axis of size 1 broadcasts); a static size wins over a symbol.
void merge_dim(std::optional<Dim>& known, const Dim& dim, bool broadcasts, int label, const InferenceContext& ctx) {
  if (!known) {
    known = dim;
    return;
  }
  if (broadcasts) {
    if (known->is_static() && known->size() == 1) {
      known = dim;
      return;
    }
    if (dim.is_static() && dim.size() == 1) return;
  }
  if (known->is_static() && dim.is_static()) {
    if (known->size() == dim.size()) return;
    ctx.fail((label >= kEllipsis ? std::string("the \"...\" axes do not broadcast: sizes ")
                                 : "subscript '" + label_name(label) + "' has sizes ") +
             known->to_string() + " and " + dim.to_string());
  }
  if (dim.is_static()) known = dim;
}

void infer_einsum(InferenceContext& ctx) {
  EinsumFail fail = [&](const std::string& message) { ctx.fail(message); };
  size_t n = ctx.num_inputs();
  if (n == 0) ctx.fail("needs at least one input");
  std::vector<int64_t> ranks;
  DType dtype = DType::kUndefined;
  for (size_t i = 0; i < n; ++i) {
    const TensorType* t = ctx.input_type(i);
    if (t == nullptr) return;
    if (dtype != DType::kUndefined && t->dtype != DType::kUndefined && t->dtype != dtype) {
      ctx.fail("inputs must share one dtype, got " + std::string(dtype_name(dtype)) + " and " + std::string(dtype_name(t->dtype)));
    }
    if (t->dtype != DType::kUndefined) dtype = t->dtype;
    if (!t->shape.has_rank()) {
      ctx.set_output_type(0, {dtype, Shape::unknown_rank()});
      return;
    }
    ranks.push_back(t->shape.rank());
  }
  EinsumPlan plan = plan_einsum(parse_for_node(ctx.node(), n, fail), ranks, fail);
  std::vector<std::optional<Dim>> dims(static_cast<size_t>(plan.num_labels));
  for (size_t i = 0; i < n; ++i) {
    const Shape& shape = ctx.input_type(i)->shape;
    for (size_t a = 0; a < plan.operand_labels[i].size(); ++a) {
      int label = plan.operand_labels[i][a];
      merge_dim(dims[static_cast<size_t>(label)], shape[a], label >= kEllipsis, label, ctx);
    }
  }
  std::vector<Dim> out;
  for (size_t d = 0; d < plan.output_labels.size(); ++d) {
    const std::optional<Dim>& dim = dims[static_cast<size_t>(plan.output_labels[d])];
    out.push_back(dim ? *dim : symbolic_dim(ctx, d));
  }
  ctx.set_output_type(0, {dtype, Shape(std::move(out))});
}

}  // namespace

void register_einsum_schemas(OpRegistry& registry) {
  OpSchema einsum("Einsum");
  einsum.input("Inputs", "T", Arity::kVariadic).output("Output", "T")
      .type_constraint("T", kNumericDTypes)
      .required_attr("equation", AttrType::kString)
      .infer(infer_einsum)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::vector<Value*> inputs = {grad};
        inputs.insert(inputs.end(), node.inputs().begin(), node.inputs().end());
        for (size_t i = 0; i < node.num_inputs(); ++i) {
          if (!is_floating(node.input(i)->dtype())) continue;
          ctx.set_input_grad(i, ctx.emit("EinsumGrad", inputs, 1,
                                         {{"equation", node.attr("equation")}, {"operand", Attribute(static_cast<int64_t>(i))}})[0]);
        }
      })
      .doc("Einstein summation over `equation`: diagonals, sums, \"...\" broadcasting, implicit or explicit output");
  registry.add(std::move(einsum));

  OpSchema einsum_grad("EinsumGrad");
  einsum_grad.input("dY", "T").input("Inputs", "T", Arity::kVariadic).output("dX", "T")
      .type_constraint("T", kFloatDTypes)
      .required_attr("equation", AttrType::kString)
      .attr("operand", AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        const TensorType* dy = ctx.input_type(0);
        int64_t operand = ctx.attr_int("operand");
        if (operand < 0 || static_cast<size_t>(operand) + 1 >= ctx.num_inputs()) {
          ctx.fail("operand " + std::to_string(operand) + " is not one of the " + std::to_string(ctx.num_inputs() - 1) + " inputs");
        }
        const TensorType* x = ctx.input_type(static_cast<size_t>(operand) + 1);
        if (dy != nullptr && x != nullptr) ctx.set_output_type(0, {dy->dtype, x->shape});
      })
      .doc("Einsum's backward for input `operand`: dY times the other inputs, summed over every subscript assignment");
  registry.add(std::move(einsum_grad));
}

void register_einsum_cpu_kernels(KernelRegistry& registry) {
  registry.add("Einsum", DeviceType::kCpu, kNumericDTypes, [](const Node& node) { return std::make_unique<EinsumKernel>(node); });
  registry.add("EinsumGrad", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<EinsumGradKernel>(node); });
}

}  // namespace weir
