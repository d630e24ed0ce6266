#include "runtime/weight_packing.h"

#include <map>

#include "core/error.h"
#include "runtime/session.h"

namespace weir {

namespace {

// Why a run on zeros cannot stand for the plan's runs; empty when it can.
std::string why_not_runnable(const Plan& plan) {
  const Graph& graph = plan.graph();
  for (const Value* input : graph.inputs()) {
    if (!input->shape().has_rank() || !input->shape().is_static()) {
      return "input '" + input->name() + "' is " + input->type().to_string() + ", not of a static shape";
    }
  }
  if (!graph.persistents().empty()) {
    return "it holds persistent values ('" + graph.persistents().front()->name() + "'), which a run would change";
  }
  if (plan.has_collectives()) return "it has collectives, which need the other ranks";
  for (const Device& device : plan.devices()) {
    if (device.type != DeviceType::kCpu) return "it runs on " + device.to_string() + "; only CPU kernels pack";
  }
  return "";
}

}  // namespace

WeightPacking pack_weights(const std::shared_ptr<const Plan>& plan) {
  WeightPacking packing;
  packing.skipped = why_not_runnable(*plan);
  if (!packing.skipped.empty()) return packing;
  std::map<std::string, Tensor> feeds;
  for (const Value* input : plan->graph().inputs()) {
    feeds[input->name()] = Tensor(input->dtype(), input->shape().sizes());  // zero-filled
  }
  try {
    Session session(plan);
    session.run(feeds);
  } catch (const Error& error) {
    packing.skipped = std::string("a run on zeros failed: ") + error.what();
    return packing;
  }
  for (size_t step = 0; step < plan->schedule().steps.size(); ++step) {
    std::vector<PackedConstant> packs = plan->kernel(step).packed_constants();
    if (packs.empty()) continue;
    ++packing.kernels;
    for (const PackedConstant& pack : packs) packing.bytes += pack.data.nbytes();
  }
  return packing;
}

}  // namespace weir
