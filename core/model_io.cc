#include "core/model_io.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cstdio>
#include <limits>

#include "core/allocation_limits.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/external_data.h"
#include "core/graph_proto.h"
#include "core/logging.h"

namespace weir {

namespace {

// Protobuf cannot parse messages of 2 GiB or more; larger weights belong in
// external data, which has no such limit.
constexpr size_t kMaxModelFileBytes = (size_t{1} << 31) - 1;

bool is_text(const std::filesystem::path& path, ModelFormat format) {
  if (format == ModelFormat::kAuto) return path.extension() == ".weirtxt";
  return format == ModelFormat::kText;
}

proto::Model model_to_proto(const Model& model, ExternalDataWriter* external) {
  if (!model.graph) throw Error(ErrorKind::kInvalidArgument, "model has no graph");
  proto::Model message;
  message.set_ir_version(model.ir_version);
  message.set_opset_version(model.opset_version);
  message.set_producer_name(model.producer_name);
  message.set_producer_version(model.producer_version);
  for (const auto& [key, value] : model.metadata) {
    proto::MetadataEntry* entry = message.add_metadata();
    entry->set_key(key);
    entry->set_value(value);
  }
  graph_to_proto(*model.graph, message.mutable_graph(), external);
  return message;
}

std::string print_text(const proto::Model& message) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  if (!printer.PrintToString(message, &text)) {
    throw Error(ErrorKind::kInternal, "protobuf could not print the model as text");
  }
  return text;
}

// Removes "<model>.<hash>.data" files left by earlier saves of this model.
void remove_stale_data_files(const std::filesystem::path& path, const std::string& keep) {
  std::string prefix = path.filename().string() + ".";
  std::error_code ec;
  std::filesystem::path directory = path.parent_path().empty() ? "." : path.parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    std::string name = entry.path().filename().string();
    // prefix + 16 hex digits + ".data"
    if (name.size() != prefix.size() + 21 || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - 5, 5, ".data") != 0 || name == keep) {
      continue;
    }
    std::filesystem::remove(entry.path(), ec);
    if (ec) logger().warn("could not remove stale data file '{}': {}", entry.path().string(), ec.message());
  }
}

class TextErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first_.empty()) {
      first_ = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

proto::Model parse_model(const std::string& bytes, bool text) {
  proto::Model message;
  if (text) {
    TextErrorCollector errors;
    google::protobuf::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(bytes, &message)) {
      throw Error(ErrorKind::kFormat, "not a valid .weirtxt model: " +
                                          (errors.first().empty() ? std::string("parse error") : errors.first()));
    }
  } else if (!message.ParseFromString(bytes)) {
    throw Error(ErrorKind::kFormat, "not a valid .weir model: the protobuf message is truncated or corrupt");
  }
  return message;
}

}  // namespace

void save_model(const Model& model, const std::filesystem::path& path, const SaveOptions& options) {
  try {
    ExternalDataWriter external(options.external_data_threshold);
    proto::Model message = model_to_proto(model, &external);
    std::string data_name;
    if (!external.empty()) {
      char hash[17];
      std::snprintf(hash, sizeof(hash), "%016llx",
                    static_cast<unsigned long long>(content_hash(external.bytes())));
      data_name = path.filename().string() + "." + hash + ".data";
      external.set_location(data_name);
      // Data first: until the model is renamed into place, the old model
      // still names its own (different) data file, so both stay consistent.
      write_file_atomically(path.parent_path() / data_name, external.bytes());
    }
    std::string bytes;
    if (is_text(path, options.format)) {
      bytes = print_text(message);
    } else if (!message.SerializeToString(&bytes)) {
      throw Error(ErrorKind::kInternal, "protobuf could not serialize the model (is it over 2 GiB inline?)");
    }
    write_file_atomically(path, bytes);
    remove_stale_data_files(path, data_name);
  } catch (Error& e) {
    e.with_file(path.string());
    throw;
  }
}

Model load_model(const std::filesystem::path& path, const LoadOptions& options) {
  LoadBudget budget;  // every tensor the model declares counts against the per-model cap
  try {
    proto::Model message = parse_model(read_file(path, kMaxModelFileBytes), is_text(path, options.format));
    if (message.ir_version() <= 0) {
      throw Error(ErrorKind::kFormat, "not a Weir model: ir_version is missing or " +
                                          std::to_string(message.ir_version()));
    }
    if (message.ir_version() > kIrVersion) {
      throw Error(ErrorKind::kUnsupported, "the model has IR version " + std::to_string(message.ir_version()) +
                                               "; this build of Weir reads up to " + std::to_string(kIrVersion) +
                                               " (written by " + message.producer_name() + " " +
                                               message.producer_version() + ")");
    }
    if (message.opset_version() > kOpsetVersion) {
      throw Error(ErrorKind::kUnsupported, "the model needs op set " + std::to_string(message.opset_version()) +
                                               "; this build of Weir has op set " + std::to_string(kOpsetVersion));
    }
    if (!message.has_graph()) throw Error(ErrorKind::kFormat, "the model has no graph");
    Model model;
    model.ir_version = message.ir_version();
    model.opset_version = message.opset_version();
    model.producer_name = message.producer_name();
    model.producer_version = message.producer_version();
    for (const proto::MetadataEntry& entry : message.metadata()) model.metadata.emplace_back(entry.key(), entry.value());
    ExternalDataReader external(path);
    model.graph = graph_from_proto(message.graph(), &external);
    return model;
  } catch (Error& e) {
    e.with_file(path.string());
    throw;
  }
}

std::string model_to_text(const Model& model) { return print_text(model_to_proto(model, nullptr)); }

}  // namespace weir
