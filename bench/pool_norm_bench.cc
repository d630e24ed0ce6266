// Pooling, normalization and softmax through Weir's kernel API next to the
// same oneDNN primitive on the same plain (NCHW / row-major) f32 layout, in
// GB/s of tensor data read and written. It shows where oneDNN wins on plain
// layouts and where Weir's own loops are as fast (docs/perf.md); oneDNN's
// fast pooling and norm paths want blocked layouts, which the layout pass
// (later) provides.
#include <benchmark/benchmark.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <random>

#include "core/graph.h"
#include "ops/register_ops.h"

namespace {

weir::Tensor random_f32(std::vector<int64_t> sizes, float low = -1.0f, float high = 1.0f) {
  weir::Tensor t(weir::DType::kFloat32, sizes);
  std::mt19937 engine(11);
  std::uniform_real_distribution<float> uniform(low, high);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = uniform(engine);
  return t;
}

struct Case {
  const char* op;
  std::vector<std::vector<int64_t>> inputs;
  std::map<std::string, weir::Attribute> attributes;
  double bytes;  // read + written
};

Case make_case(int which) {
  const std::vector<int64_t> image = {1, 64, 112, 112}, channel = {64};
  const double image_bytes = 4.0 * 64 * 112 * 112;
  switch (which) {
    case 0:
      return {"MaxPool", {image},
              {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
               {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
              image_bytes * 1.25};
    case 1:
      return {"AveragePool", {image},
              {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
               {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
              image_bytes * 1.25};
    case 2:
      return {"BatchNormalization", {image, channel, channel, channel, channel}, {}, image_bytes * 2};
    case 3:
      return {"LayerNormalization", {{128, 768}, {768}, {768}}, {{"axis", int64_t{-1}}}, 4.0 * 128 * 768 * 2};
    case 4:
      return {"Softmax", {{12 * 128, 128}}, {{"axis", int64_t{-1}}}, 4.0 * 12 * 128 * 128 * 2};
    default:  // SqueezeNet's global pool on channels-last data, batch 1 (Weir only)
      return {"ReduceMean", {{1, 13, 13, 1000}}, {{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t{1}}},
              4.0 * (13 * 13 * 1000 + 1000)};
  }
}

void BM_Weir(benchmark::State& state) {
  Case c = make_case(static_cast<int>(state.range(0)));
  weir::Graph g("bench");
  std::vector<weir::Value*> values;
  std::vector<weir::Tensor> feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    values.push_back(g.add_input("x" + std::to_string(i), {weir::DType::kFloat32, weir::Shape::from_sizes(c.inputs[i])}));
    // Variances positive.
    feeds.push_back(random_f32(c.inputs[i], i == 4 ? 0.5f : -1.0f, 1.0f));
  }
  weir::Node* node = g.add_node(c.op, values, 1, c.attributes);
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  for (auto _ : state) {
    weir::KernelContext ctx(*node, feeds, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
  state.SetLabel(c.op);
  state.counters["GB/s"] = benchmark::Counter(c.bytes * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// The same problem as one oneDNN primitive on plain layouts (output buffer
// allocated once, so this is a lower bound on oneDNN's time).
void BM_OneDnn(benchmark::State& state) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  Case c = make_case(static_cast<int>(state.range(0)));
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  std::vector<weir::Tensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) inputs.push_back(random_f32(c.inputs[i], i == 4 ? 0.5f : -1.0f, 1.0f));
  primitive prim;
  std::unordered_map<int, memory> args;
  std::string op = c.op;
  if (op == "MaxPool" || op == "AveragePool") {
    memory::desc src({1, 64, 112, 112}, dt::f32, tag::nchw), dst({1, 64, 56, 56}, dt::f32, tag::nchw);
    pooling_v2_forward::desc d(prop_kind::forward_inference,
                               op == "MaxPool" ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding, src, dst,
                               {2, 2}, {3, 3}, {0, 0}, {1, 1}, {1, 1});
    prim = pooling_v2_forward(pooling_v2_forward::primitive_desc(d, eng));
    args = {{DNNL_ARG_SRC, memory(src, eng, inputs[0].raw_data())}, {DNNL_ARG_DST, memory(dst, eng)}};
  } else if (op == "BatchNormalization") {
    memory::desc data({1, 64, 112, 112}, dt::f32, tag::nchw), channel({64}, dt::f32, tag::a);
    batch_normalization_forward::desc d(prop_kind::forward_inference, data, 1e-5f,
                                        normalization_flags::use_global_stats | normalization_flags::use_scale |
                                            normalization_flags::use_shift);
    prim = batch_normalization_forward(batch_normalization_forward::primitive_desc(d, eng));
    args = {{DNNL_ARG_SRC, memory(data, eng, inputs[0].raw_data())}, {DNNL_ARG_DST, memory(data, eng)},
            {DNNL_ARG_SCALE, memory(channel, eng, inputs[1].raw_data())}, {DNNL_ARG_SHIFT, memory(channel, eng, inputs[2].raw_data())},
            {DNNL_ARG_MEAN, memory(channel, eng, inputs[3].raw_data())}, {DNNL_ARG_VARIANCE, memory(channel, eng, inputs[4].raw_data())}};
  } else if (op == "LayerNormalization") {
    memory::desc data({128, 768}, dt::f32, tag::ab), channel({768}, dt::f32, tag::a);
    layer_normalization_forward::desc d(prop_kind::forward_inference, data, 1e-5f,
                                        normalization_flags::use_scale | normalization_flags::use_shift);
    prim = layer_normalization_forward(layer_normalization_forward::primitive_desc(d, eng));
    args = {{DNNL_ARG_SRC, memory(data, eng, inputs[0].raw_data())}, {DNNL_ARG_DST, memory(data, eng)},
            {DNNL_ARG_SCALE, memory(channel, eng, inputs[1].raw_data())}, {DNNL_ARG_SHIFT, memory(channel, eng, inputs[2].raw_data())}};
  } else {
    memory::desc data({12 * 128, 128}, dt::f32, tag::ab);
    softmax_forward::desc d(prop_kind::forward_inference, data, 1);
    prim = softmax_forward(softmax_forward::primitive_desc(d, eng));
    args = {{DNNL_ARG_SRC, memory(data, eng, inputs[0].raw_data())}, {DNNL_ARG_DST, memory(data, eng)}};
  }
  for (auto _ : state) {
    prim.execute(strm, args);
    strm.wait();
  }
  state.SetLabel(c.op);
  state.counters["GB/s"] = benchmark::Counter(c.bytes * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

}  // namespace

// 0 MaxPool 3x3/2 and 1 AveragePool on N1 C64 112x112 (the ResNet stem),
// 2 BatchNormalization (inference) on the same, 3 LayerNormalization [128, 768],
// 4 Softmax [1536, 128] (BERT attention scores), 5 ReduceMean over H, W of
// N1 13x13 C1000 (a global pool after the layout pass; Weir only).
BENCHMARK(BM_Weir)->DenseRange(0, 5)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_OneDnn)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond)->UseRealTime();
