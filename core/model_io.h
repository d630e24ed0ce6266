// Saving and loading Weir models: .weir (binary protobuf) and .weirtxt (text).
//
//   weir::save_model(model, "out/net.weir");                    // binary
//   weir::save_model(model, "out/net.weirtxt");                 // text
//   weir::SaveOptions options;
//   options.external_data_threshold = 4096;                     // bigger tensors go external
//   weir::save_model(model, "out/net.weir", options);
//   weir::Model loaded = weir::load_model("out/net.weir");      // throws weir::Error naming the file
//
// Tensors of at least external_data_threshold bytes are written to one data
// file beside the model, "<model file name>.<content hash>.data", at 64-byte
// aligned offsets. Every file is written to a temporary and renamed into
// place, data file first: a crash mid-save leaves the previous model (and
// the data file it names) intact. Data files of earlier saves of the same
// model are removed after the new model is in place.
//
// Loading checks the IR and opset versions (a newer file is an error that
// says so), every name reference, every tensor size against the bytes
// present, and that external data stays inside the model's directory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "core/model.h"

namespace weir {

enum class ModelFormat {
  kAuto,    // by extension: .weirtxt is text, anything else binary
  kBinary,
  kText,
};

struct SaveOptions {
  ModelFormat format = ModelFormat::kAuto;
  // Tensors of at least this many bytes go to the external data file;
  // SIZE_MAX keeps everything inline.
  size_t external_data_threshold = 1024;
};

struct LoadOptions {
  ModelFormat format = ModelFormat::kAuto;
};

void save_model(const Model& model, const std::filesystem::path& path, const SaveOptions& options = {});
Model load_model(const std::filesystem::path& path, const LoadOptions& options = {});

// The whole model in text form with every tensor inline (for printing and
// tests; no files are written).
std::string model_to_text(const Model& model);

}  // namespace weir
