#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "models/models.h"

namespace weir::models {

Var bert(GraphBuilder& b, Var ids, const BertConfig& config) {
  const int64_t seq = ids.size(1);
  if (ids.dtype() != DType::kInt64 || seq <= 0 || seq > config.max_positions) {
    b.fail(ErrorKind::kShape, "bert: token ids must be i64[batch, seq] with a static seq <= " +
                                  std::to_string(config.max_positions) + ", got " + ids.type().to_string());
    return {};
  }
  const int64_t ffn = config.intermediate > 0 ? config.intermediate : 4 * config.hidden;
  nn::Embedding tokens(b, "token_embedding", config.vocab, config.hidden);
  nn::Embedding positions(b, "position_embedding", config.max_positions, config.hidden);
  nn::LayerNorm embedding_norm(b, "embedding_norm", config.hidden);
  nn::Dropout dropout(config.dropout, config.training);

  std::vector<int64_t> position_ids(static_cast<size_t>(seq));
  for (int64_t i = 0; i < seq; ++i) position_ids[static_cast<size_t>(i)] = i;
  Var pos = positions(b.ints(position_ids));  // [seq, hidden], broadcast over the batch
  Var h = dropout(embedding_norm(tokens(ids) + pos));

  for (int64_t layer = 0; layer < config.layers; ++layer) {
    auto scope = b.scope("layer" + std::to_string(layer));
    nn::MultiHeadAttention attention(b, "attention", config.hidden, config.heads, config.dropout, config.training);
    nn::LayerNorm norm1(b, "attention_norm", config.hidden);
    nn::Linear up(b, "ffn_up", config.hidden, ffn);
    nn::Linear down(b, "ffn_down", ffn, config.hidden);
    nn::LayerNorm norm2(b, "ffn_norm", config.hidden);
    h = norm1(h + dropout(attention(h)));
    h = norm2(h + dropout(down(nn::gelu(up(h)))));
  }
  Var pooled = nn::reduce_mean(h, {1});  // [batch, hidden]
  nn::Linear classifier(b, "classifier", config.hidden, config.classes);
  return classifier(nn::tanh(pooled));
}

}  // namespace weir::models
