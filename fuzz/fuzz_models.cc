#include "fuzz/fuzz_models.h"

#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "runtime/plan.h"

namespace weir::fuzz {

std::unique_ptr<Session> small_training_session() {
  models::ZooOptions zoo;
  zoo.mlp_width = 8;
  zoo.image_size = 8;
  zoo.classes = 4;
  models::ClassifierGraph train = models::build_classifier("mlp", /*batch=*/2, /*training=*/true, zoo);
  minimize(*train.graph, train.loss, OptimizerConfig{});
  return std::make_unique<Session>(compile(*train.graph));
}

std::string state_fingerprint(const Session& session) {
  std::string bytes = std::to_string(session.rng_state());
  for (const Value* value : session.plan().graph().persistents()) {
    Tensor state = session.state(value->name());
    bytes += value->name();
    bytes.append(static_cast<const char*>(state.raw_data()), state.nbytes());
  }
  return bytes;
}

}  // namespace weir::fuzz
