#include "frontend/strategy/strategy_file.h"

#include <google/protobuf/util/json_util.h>

#include <memory>

#include "core/error.h"
#include "core/mapped_file.h"
#include "frontend/strategy/strategy.h"
#include "frontend/strategy/strategy_file.pb.h"

namespace weir {

namespace {

constexpr size_t kMaxStrategyBytes = 1 << 20;

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void refuse(ErrorKind kind, const std::string& field, const std::string& why) const {
    throw Error(kind, "strategy file '" + source_ + "': " + field + " " + why).with_file(source_);
  }

  DType amp_dtype(const std::string& text) const {
    if (text == "bf16" || text == "bfloat16") return DType::kBFloat16;
    if (text == "fp16" || text == "f16" || text == "float16") return DType::kFloat16;
    refuse(ErrorKind::kInvalidArgument, "amp_configs.dtype", "is '" + text + "'; expected bf16 or fp16");
  }

  DType allreduce_dtype(const std::string& text) const {
    const DType dtype = find_dtype(text).value_or(DType::kUndefined);
    if (dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16) return dtype;
    refuse(ErrorKind::kInvalidArgument, "allreduce_dtype", "is '" + text + "'; expected f32, f16 or bf16");
  }

  void positive(const char* field, double value) const {
    if (!(value > 0)) refuse(ErrorKind::kInvalidArgument, field, "must be positive, got " + std::to_string(value));
  }

  Strategy apply(const strategy_file::DistributedStrategy& file, Strategy strategy) const {
    if (file.has_amp()) strategy.amp.enabled = file.amp();
    if (file.has_amp_configs()) {
      const strategy_file::AmpConfigs& amp = file.amp_configs();
      if (amp.has_dtype()) strategy.amp.dtype = amp_dtype(amp.dtype());
      for (const std::string& op : amp.custom_white_list()) strategy.amp.allow.insert(op);
      for (const std::string& op : amp.custom_black_list()) strategy.amp.deny.insert(op);
      if (amp.has_use_dynamic_loss_scaling()) {
        strategy.amp.loss_scaling = amp.use_dynamic_loss_scaling() ? AmpStrategy::LossScaling::kOn : AmpStrategy::LossScaling::kOff;
      }
      if (amp.has_init_loss_scaling()) {
        positive("amp_configs.init_loss_scaling", amp.init_loss_scaling());
        strategy.amp.initial_scale = amp.init_loss_scaling();
      }
      if (amp.has_incr_every_n_steps()) {
        positive("amp_configs.incr_every_n_steps", static_cast<double>(amp.incr_every_n_steps()));
        strategy.amp.growth_interval = amp.incr_every_n_steps();
      }
      if (amp.has_incr_ratio()) {
        if (!(amp.incr_ratio() > 1)) refuse(ErrorKind::kInvalidArgument, "amp_configs.incr_ratio", "must be above 1");
        strategy.amp.growth_factor = amp.incr_ratio();
      }
      if (amp.has_decr_ratio()) {
        if (!(amp.decr_ratio() > 0 && amp.decr_ratio() < 1)) {
          refuse(ErrorKind::kInvalidArgument, "amp_configs.decr_ratio", "must be between 0 and 1");
        }
        strategy.amp.backoff_factor = amp.decr_ratio();
      }
    }
    if (file.has_recompute()) {
      strategy.recompute.mode = !file.recompute()                                   ? RecomputeMode::kOff
                                : file.recompute_configs().checkpoints().empty() ? RecomputeMode::kAuto
                                                                                  : RecomputeMode::kCheckpoints;
      strategy.recompute.checkpoints.assign(file.recompute_configs().checkpoints().begin(),
                                            file.recompute_configs().checkpoints().end());
    }
    if (file.recompute_configs().has_memory_budget()) {
      try {
        strategy.recompute.memory_budget = parse_byte_size(file.recompute_configs().memory_budget());
      } catch (const Error& error) {
        refuse(ErrorKind::kInvalidArgument, "recompute_configs.memory_budget", error.message());
      }
    }

    GradientCommunicationStrategy& comm = strategy.communication;
    if (file.has_fuse_all_reduce_ops()) comm.fuse_all_reduce_ops = file.fuse_all_reduce_ops();
    if (file.has_overlap_communication()) comm.overlap_communication = file.overlap_communication();
    if (file.has_fuse_grad_size_in_mb()) {
      positive("fuse_grad_size_in_MB", file.fuse_grad_size_in_mb());
      comm.fuse_grad_size_in_MB = file.fuse_grad_size_in_mb();
    }
    if (file.has_first_bucket_mb()) {
      positive("first_bucket_MB", file.first_bucket_mb());
      comm.first_bucket_MB = file.first_bucket_mb();
    }
    if (file.has_comm_streams() && file.has_nccl_comm_num() && file.comm_streams() != file.nccl_comm_num()) {
      refuse(ErrorKind::kInvalidArgument, "comm_streams", "and nccl_comm_num name the same setting and differ (" +
                                                              std::to_string(file.comm_streams()) + " and " +
                                                              std::to_string(file.nccl_comm_num()) + ")");
    }
    if (file.has_comm_streams() || file.has_nccl_comm_num()) {
      const int streams = file.has_comm_streams() ? file.comm_streams() : file.nccl_comm_num();
      if (streams < 1 || streams > 64) {
        refuse(ErrorKind::kInvalidArgument, file.has_comm_streams() ? "comm_streams" : "nccl_comm_num",
               "must be 1 to 64, got " + std::to_string(streams));
      }
      comm.comm_streams = streams;
    }
    if (file.has_fp16_allreduce() && file.has_allreduce_dtype() && file.fp16_allreduce() &&
        allreduce_dtype(file.allreduce_dtype()) != DType::kFloat16) {
      refuse(ErrorKind::kInvalidArgument, "fp16_allreduce",
             "is true but allreduce_dtype is '" + file.allreduce_dtype() + "'; set one of them");
    }
    if (file.has_fp16_allreduce()) comm.allreduce_dtype = file.fp16_allreduce() ? DType::kFloat16 : DType::kFloat32;
    if (file.has_allreduce_dtype()) comm.allreduce_dtype = allreduce_dtype(file.allreduce_dtype());
    if (file.has_use_hierarchical_allreduce()) comm.use_hierarchical_allreduce = file.use_hierarchical_allreduce();
    if (file.has_hierarchical_allreduce_inter_nranks()) {
      if (file.hierarchical_allreduce_inter_nranks() < 1) {
        refuse(ErrorKind::kInvalidArgument, "hierarchical_allreduce_inter_nranks",
               "(ranks per node) must be at least 1, got " + std::to_string(file.hierarchical_allreduce_inter_nranks()));
      }
      comm.hierarchical_allreduce_inter_nranks = file.hierarchical_allreduce_inter_nranks();
    }
    if (file.has_two_d_allreduce_rows()) {
      if (file.two_d_allreduce_rows() < 0) {
        refuse(ErrorKind::kInvalidArgument, "two_d_allreduce_rows",
               "must be at least 1 (0: off), got " + std::to_string(file.two_d_allreduce_rows()));
      }
      comm.two_d_allreduce_rows = file.two_d_allreduce_rows();
    }
    if (comm.use_hierarchical_allreduce && comm.two_d_allreduce_rows > 0) {
      refuse(ErrorKind::kInvalidArgument, "use_hierarchical_allreduce",
             "and two_d_allreduce_rows each choose the allreduce's topology; set one");
    }
    if (file.has_gradient_merge()) strategy.gradient_merge.enabled = file.gradient_merge();
    if (file.gradient_merge_configs().has_k_steps()) {
      if (file.gradient_merge_configs().k_steps() < 1) {
        refuse(ErrorKind::kInvalidArgument, "gradient_merge_configs.k_steps",
               "(micro-steps per update) must be at least 1, got " + std::to_string(file.gradient_merge_configs().k_steps()));
      }
      strategy.gradient_merge.k_steps = file.gradient_merge_configs().k_steps();
    }
    if (file.gradient_merge_configs().has_avg()) strategy.gradient_merge.avg = file.gradient_merge_configs().avg();
    apply_localsgd(file, strategy.localsgd);
    apply_dgc(file, strategy.dgc);
    return strategy;
  }

 private:
  void at_least(const char* field, int64_t value, int64_t least) const {
    if (value < least) {
      refuse(ErrorKind::kInvalidArgument, field, "must be at least " + std::to_string(least) + ", got " + std::to_string(value));
    }
  }

  void apply_localsgd(const strategy_file::DistributedStrategy& file, LocalSgdStrategy& localsgd) const {
    if (file.has_localsgd() && file.has_adaptive_localsgd() && file.localsgd() && file.adaptive_localsgd()) {
      refuse(ErrorKind::kInvalidArgument, "localsgd", "and adaptive_localsgd are both true; set one");
    }
    if (file.has_localsgd()) {
      localsgd.enabled = file.localsgd();
      if (file.localsgd()) localsgd.adaptive = false;
    }
    if (file.has_adaptive_localsgd()) {
      if (file.adaptive_localsgd()) localsgd.enabled = localsgd.adaptive = true;
      else if (localsgd.adaptive) localsgd.enabled = localsgd.adaptive = false;
    }
    const strategy_file::LocalSgdConfigs& fixed = file.localsgd_configs();
    if (fixed.has_k_steps()) {
      at_least("localsgd_configs.k_steps", fixed.k_steps(), 1);
      localsgd.k_steps = fixed.k_steps();
    }
    if (fixed.has_begin_step()) {
      at_least("localsgd_configs.begin_step", fixed.begin_step(), 0);
      if (!localsgd.adaptive) localsgd.begin_step = fixed.begin_step();
    }
    const strategy_file::AdaptiveLocalSgdConfigs& adaptive = file.adaptive_localsgd_configs();
    if (adaptive.has_init_k_steps()) {
      at_least("adaptive_localsgd_configs.init_k_steps", adaptive.init_k_steps(), 1);
      if (adaptive.init_k_steps() > 16) {
        refuse(ErrorKind::kInvalidArgument, "adaptive_localsgd_configs.init_k_steps",
               "must be at most 16 (adaptive intervals are 1 to 16), got " + std::to_string(adaptive.init_k_steps()));
      }
      localsgd.init_k_steps = adaptive.init_k_steps();
    }
    if (adaptive.has_begin_step()) {
      at_least("adaptive_localsgd_configs.begin_step", adaptive.begin_step(), 0);
      if (localsgd.adaptive) localsgd.begin_step = adaptive.begin_step();
    }
  }

  void apply_dgc(const strategy_file::DistributedStrategy& file, DgcStrategy& dgc) const {
    if (file.has_dgc()) dgc.enabled = file.dgc();
    const strategy_file::DgcConfigs& configs = file.dgc_configs();
    if (configs.has_rampup_begin_step()) {
      at_least("dgc_configs.rampup_begin_step", configs.rampup_begin_step(), 0);
      dgc.rampup_begin_step = configs.rampup_begin_step();
    }
    if (configs.has_rampup_step()) {
      at_least("dgc_configs.rampup_step", configs.rampup_step(), 1);
      dgc.rampup_step = configs.rampup_step();
    }
    if (configs.sparsity_size() > 0) {
      dgc.sparsity.assign(configs.sparsity().begin(), configs.sparsity().end());
      for (double sparsity : dgc.sparsity) {
        if (!(sparsity >= 0 && sparsity < 1)) {
          refuse(ErrorKind::kInvalidArgument, "dgc_configs.sparsity",
                 "entries are the fractions of each gradient not sent, in [0, 1); got " + std::to_string(sparsity));
        }
      }
    }
    if (configs.has_clip_norm()) {
      if (!(configs.clip_norm() >= 0)) {
        refuse(ErrorKind::kInvalidArgument, "dgc_configs.clip_norm", "must be at least 0 (0: off), got " +
                                                                         std::to_string(configs.clip_norm()));
      }
      dgc.clip_norm = configs.clip_norm();
    }
  }

  std::string source_;
};

}  // namespace

Strategy parse_strategy_json(const std::string& json, const std::string& source, const Strategy& base) {
  strategy_file::DistributedStrategy file;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &file, options);
  if (!status.ok()) {
    throw Error(ErrorKind::kFormat, "strategy file '" + source + "': " + std::string(status.message()) +
                                        " (docs/training.md lists the fields a strategy file may set)")
        .with_file(source);
  }
  return Reader(source).apply(file, base);
}

Strategy read_strategy_file(const std::string& path, const Strategy& base) {
  std::shared_ptr<MappedFile> file;
  try {
    file = map_file(path);
  } catch (const Error& error) {
    throw Error(ErrorKind::kIo, "cannot read the strategy file '" + path + "': " + error.message()).with_file(path);
  }
  if (file->size > kMaxStrategyBytes) {
    throw Error(ErrorKind::kFormat, "the strategy file '" + path + "' is " + std::to_string(file->size) +
                                        " bytes; a strategy is a small JSON object (at most 1 MiB)")
        .with_file(path);
  }
  return parse_strategy_json(std::string(static_cast<const char*>(file->data), file->size), path, base);
}

}  // namespace weir
