// How far a reduced-precision form of a model strays from its f32 form:
// both run on the same seeded inputs, and for output 0 (the logits) it
// prints the top-1 agreement (argmax over the last axis, row by row), the
// same for the logits less their mean over the inputs (below), the
// relative L2 of the logits (||f32 - low|| / ||f32||; median and worst
// input) and the largest absolute difference.
//
//   weir_precision_agreement MODEL.onnx --amp bf16 [--inputs 100] [--seed 1]
//   weir_precision_agreement MODEL.onnx --against MODEL.int8.onnx    # another file (a quantized model)
//   weir_precision_agreement fm.weir --amp bf16 --examples test.npy  # real inputs, one row each
//
// Image inputs (4-D f32) are smooth random images in [0, 1) (--images
// noise: uniform noise, on which the zoo's BatchNorm statistics were set,
// bench/zoo_export.cc); other float inputs uniform in [0, 1); integer
// inputs (token ids) uniform in [0, --int-range). The inputs depend on the
// seed only, so two runs with the same seed see the same inputs.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "core/error.h"
#include "frontend/data/npy.h"
#include "ops/dtype_dispatch.h"
#include "runtime/session.h"
#include "tools/graph-runner/model_loading.h"

namespace {

// A smooth image [N, C, H, W] in [0, 1): per channel a sum of three plane
// waves of random direction, frequency (0.5 to 6 cycles across) and phase.
// Uniform noise averages out in a global pool, so on noise an untrained
// classifier's logits barely depend on the input (MobileNetV2's top two
// differ by 2% of the logits' spread); smooth images move them.
void fill_smooth_image(weir::Tensor& t, std::mt19937_64& rng) {
  const auto& s = t.sizes();
  const int64_t planes = s[0] * s[1], h = s[2], w = s[3];
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t c = 0; c < planes; ++c) {
    float fx[3], fy[3], phase[3];
    for (int k = 0; k < 3; ++k) {
      float angle = 6.2831853f * unit(rng), cycles = 0.5f + 5.5f * unit(rng);
      fx[k] = 6.2831853f * cycles * std::cos(angle) / static_cast<float>(w);
      fy[k] = 6.2831853f * cycles * std::sin(angle) / static_cast<float>(h);
      phase[k] = 6.2831853f * unit(rng);
    }
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        float v = 0;
        for (int k = 0; k < 3; ++k) v += std::sin(fx[k] * static_cast<float>(x) + fy[k] * static_cast<float>(y) + phase[k]);
        p[(c * h + y) * w + x] = std::min(0.5f + v / 6.0f, 0.999f);
      }
    }
  }
}

weir::Tensor seeded_input(const weir::Value& input, uint64_t seed, int64_t int_range, bool smooth) {
  std::vector<int64_t> sizes;
  for (const weir::Dim& d : input.shape().dims()) sizes.push_back(d.is_static() ? d.size() : 1);
  weir::Tensor t(input.dtype(), sizes);
  std::mt19937_64 rng(seed);
  if (smooth && input.dtype() == weir::DType::kFloat32 && sizes.size() == 4) {
    fill_smooth_image(t, rng);
    return t;
  }
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> id(0, int_range - 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (input.dtype()) {
      case weir::DType::kFloat32: t.data<float>()[i] = unit(rng); break;
      case weir::DType::kInt64: t.data<int64_t>()[i] = id(rng); break;
      case weir::DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(id(rng)); break;
      default:
        throw weir::Error(weir::ErrorKind::kUnsupported,
                          "input '" + input.name() + "' is " + input.type().to_string() + ": only f32, i32 and i64 inputs are made");
    }
  }
  return t;
}

std::vector<double> as_doubles(const weir::Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.num_elements()));
  weir::dispatch_dtype(t.dtype(), [&]<typename T>() {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(weir::load(t.data<T>()[i]));
  });
  return out;
}

size_t argmax(const std::vector<double>& v, size_t begin, size_t end) {
  return static_cast<size_t>(std::max_element(v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end)) -
                             v.begin()) - begin;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Top-1 agreement and logit error of a reduced-precision model against its f32 form"};
  std::string model, against, amp = "off";
  int inputs = 100;
  uint64_t seed = 1;
  int64_t int_range = 1000;
  int opt_level = 3;
  std::string images = "smooth";
  std::string examples_file;
  app.add_option("model", model, "the f32 model (.onnx, .weir)")->required();
  app.add_option("--amp", amp, "run the same model again with --amp bf16 or fp16");
  app.add_option("--against", against, "compare with this model file instead (e.g. a quantized one)");
  app.add_option("--inputs", inputs, "how many seeded inputs (default 100)")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "the first input's seed (default 1)");
  app.add_option("--int-range", int_range, "integer inputs are drawn from [0, N) (default 1000)")->check(CLI::PositiveNumber);
  app.add_option("--opt-level", opt_level, "optimization level of both (default 3)");
  app.add_option("--images", images, "4-D f32 inputs: smooth (default: random plane waves) or noise (uniform)")
      ->check(CLI::IsMember({"smooth", "noise"}));
  app.add_option("--examples", examples_file,
                 "real inputs: an .npy [N, ...] whose rows feed the model's (first) input one at a time, in order");
  CLI11_PARSE(app, argc, argv);
  try {
    auto ops = weir::tools::make_op_set({});
    weir::tools::ModelOptions f32{.opt_level = opt_level};
    weir::tools::ModelOptions low = f32;
    low.amp = amp;
    if (against.empty() && amp == "off") throw weir::Error(weir::ErrorKind::kInvalidArgument, "give --amp or --against");
    auto reference_plan = weir::tools::load_runnable(model, *ops, f32);
    auto low_plan = weir::tools::load_runnable(against.empty() ? model : against, *ops, low);
    weir::Session reference(reference_plan), reduced(low_plan);
    weir::Tensor examples;
    if (!examples_file.empty()) {
      examples = weir::read_npy(examples_file);
      if (examples.rank() < 1 || examples.sizes()[0] < inputs || examples.dtype() != weir::DType::kFloat32) {
        throw weir::Error(weir::ErrorKind::kShape, "--examples " + examples_file + " is " + examples.type_string() +
                                                       ": wanted f32 with at least --inputs rows");
      }
    }
    std::vector<std::vector<double>> rows_a, rows_b;  // one row of logits per example
    std::vector<double> l2s;                           // per input
    double worst_abs = 0;
    for (int k = 0; k < inputs; ++k) {
      std::map<std::string, weir::Tensor> feeds;
      uint64_t s = seed + static_cast<uint64_t>(k) * 7919;
      for (const weir::Value* input : reference_plan->graph().inputs()) {
        feeds[input->name()] = seeded_input(*input, s++, int_range, images == "smooth");
      }
      if (examples.defined()) {
        weir::Tensor& x = feeds.at(reference_plan->graph().inputs().at(0)->name());
        const int64_t row = examples.num_elements() / examples.sizes()[0];
        if (x.num_elements() != row) {
          throw weir::Error(weir::ErrorKind::kShape, "--examples rows have " + std::to_string(row) +
                                                         " values; the model's input is " + x.type_string());
        }
        std::copy_n(examples.data<float>() + k * row, row, x.data<float>());
      }
      std::vector<double> a = as_doubles(reference.run(feeds).at(0));
      std::vector<double> b = as_doubles(reduced.run(feeds).at(0));
      if (a.size() != b.size() || a.empty()) throw weir::Error(weir::ErrorKind::kShape, "the two models' first outputs differ in size");
      const auto& dims = reference_plan->graph().outputs().at(0)->shape().dims();
      size_t classes = dims.empty() || !dims.back().is_static() ? a.size() : static_cast<size_t>(dims.back().size());
      for (size_t r = 0; r + classes <= a.size(); r += classes) {
        rows_a.emplace_back(a.begin() + static_cast<std::ptrdiff_t>(r), a.begin() + static_cast<std::ptrdiff_t>(r + classes));
        rows_b.emplace_back(b.begin() + static_cast<std::ptrdiff_t>(r), b.begin() + static_cast<std::ptrdiff_t>(r + classes));
      }
      double diff = 0, norm = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        diff += (a[i] - b[i]) * (a[i] - b[i]);
        norm += a[i] * a[i];
        worst_abs = std::max(worst_abs, std::abs(a[i] - b[i]));
      }
      l2s.push_back(norm == 0 ? 0 : std::sqrt(diff / norm));
    }
    // Each model's logits less its mean over all the inputs: what depends
    // on the input. An untrained classifier gives every input the same top
    // class (its biases and the mean feature decide), so raw agreement
    // tests little; the centered top-1 varies from input to input.
    auto centered = [](std::vector<std::vector<double>> rows) {
      std::vector<double> mean(rows[0].size(), 0.0);
      for (const auto& row : rows) {
        for (size_t j = 0; j < row.size(); ++j) mean[j] += row[j] / static_cast<double>(rows.size());
      }
      for (auto& row : rows) {
        for (size_t j = 0; j < row.size(); ++j) row[j] -= mean[j];
      }
      return rows;
    };
    struct Agreement {
      int agree = 0;
      std::set<size_t> classes;  // distinct f32 top-1 classes
      std::vector<double> margins;  // f32 top-1 minus top-2
    };
    auto agreement = [](const std::vector<std::vector<double>>& xs, const std::vector<std::vector<double>>& ys) {
      Agreement result;
      for (size_t i = 0; i < xs.size(); ++i) {
        size_t top = argmax(xs[i], 0, xs[i].size());
        result.agree += top == argmax(ys[i], 0, ys[i].size());
        result.classes.insert(top);
        std::vector<double> sorted = xs[i];
        std::sort(sorted.rbegin(), sorted.rend());
        if (sorted.size() > 1) result.margins.push_back(sorted[0] - sorted[1]);
      }
      return result;
    };
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    Agreement raw = agreement(rows_a, rows_b), input_part = agreement(centered(rows_a), centered(rows_b));
    const double n = static_cast<double>(rows_a.size());
    std::printf("%s %s, %zu examples:\n", model.c_str(), against.empty() ? ("--amp " + amp).c_str() : against.c_str(),
                rows_a.size());
    std::printf("  top-1 agreement %.1f%% (%zu distinct f32 top-1 classes, median top-1 margin %.3g)\n",
                100.0 * raw.agree / n, raw.classes.size(), median(raw.margins));
    std::printf("  centered top-1 agreement %.1f%% (%zu distinct classes, median margin %.3g)\n",
                100.0 * input_part.agree / n, input_part.classes.size(), median(input_part.margins));
    std::printf("  logits relative L2 median %.3g worst %.3g, max |diff| %.3g\n", median(l2s),
                *std::max_element(l2s.begin(), l2s.end()), worst_abs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
