#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "models/models.h"

namespace weir::models {

Var mlp(GraphBuilder& b, Var x, const MlpConfig& config) {
  Var h = x.shape().has_rank() && x.shape().rank() > 2 ? nn::flatten(x, 1) : x;
  int64_t features = h.size(1);
  if (features <= 0) {
    b.fail(ErrorKind::kShape, "mlp: the input '" + x.name() + "' needs a static feature size, got " + x.type().to_string());
    return {};
  }
  for (size_t i = 0; i < config.hidden.size(); ++i) {
    nn::Linear fc(b, "fc" + std::to_string(i + 1), features, config.hidden[i]);
    h = nn::relu(fc(h));
    if (config.dropout > 0) h = nn::dropout(h, config.dropout, /*training=*/true);
    features = config.hidden[i];
  }
  nn::Linear out(b, "fc" + std::to_string(config.hidden.size() + 1), features, config.classes);
  return out(h);
}

}  // namespace weir::models
