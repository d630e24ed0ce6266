// TfIdfVectorizer (ONNX opset 9): schema and CPU kernel, integer inputs only.
//
// TfIdfVectorizer(X) counts, in each row of X ([C] or [N, C], int32 or int64),
// the n-grams of a pool (attribute pool_int64s) made of items spaced
// skip + 1 apart for every skip in [0, max_skip_count], for lengths in
// [min_gram_length, max_gram_length]. Unigrams are counted once per position
// (skips do not apply to them), as ONNX Runtime does. Pool entry i's count
// goes to Y[ngram_indexes[i]] (f32, [max(ngram_indexes) + 1] per row): the
// count (TF), min(count, 1) · weights[i] (IDF) or count · weights[i] (TFIDF).
// Weir has no string tensors: a node with pool_strings is refused.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_tfidf_vectorizer_schema(OpRegistry& registry);
void register_tfidf_vectorizer_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
