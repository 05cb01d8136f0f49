#include "autoheal/core/flight_recorder_env.h"

namespace autoheal {

std::string FlightRecorderDir(std::string_view state_dir, std::string_view job, int restart) {
    return std::string(state_dir) + "/jobs/" + std::string(job) + "/run" + std::to_string(restart) +
           "/flight-recorder";
}

std::vector<std::pair<std::string, std::string>> FlightRecorderEnv(const TaskEnvLookup& lookup,
                                                                   const std::string& node_dir,
                                                                   bool* dump_dir_needed) {
    *dump_dir_needed = false;
    std::vector<std::pair<std::string, std::string>> out;
    // A value inside this run's flight recorder folder is ours, not the job's: an srun task
    // inherits the batch step's variables, set for the batch host's folder.
    const std::string run_dir = node_dir.substr(0, node_dir.rfind('/') + 1);
    auto set = [&](std::string_view name) {
        const auto v = lookup(name);
        return v.has_value() && !(run_dir.size() > 1 && v->starts_with(run_dir));
    };
    // The job's own buffer size wins; 0 (or anything not a positive number) turns it all off.
    for (std::string_view name : {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}) {
        if (auto v = lookup(name)) {
            if (v->empty() || v->find_first_not_of("0123456789") != std::string::npos ||
                v->find_first_not_of('0') == std::string::npos) {
                return {};
            }
        }
    }
    if (!set("TORCH_FR_BUFFER_SIZE") && !set("TORCH_NCCL_TRACE_BUFFER_SIZE")) {
        out.emplace_back("TORCH_NCCL_TRACE_BUFFER_SIZE", kFrBufferEntries);
        out.emplace_back("TORCH_FR_BUFFER_SIZE", kFrBufferEntries);
    }
    if (!set("TORCH_NCCL_DUMP_ON_TIMEOUT")) out.emplace_back("TORCH_NCCL_DUMP_ON_TIMEOUT", "1");
    if (!set("TORCH_NCCL_DEBUG_INFO_TEMP_FILE") && !set("TORCH_FR_DUMP_TEMP_FILE")) {
        const std::string prefix = node_dir + "/" + std::string(kFrDumpPrefix);
        out.emplace_back("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", prefix);
        out.emplace_back("TORCH_FR_DUMP_TEMP_FILE", prefix);
        if (!set("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")) {
            out.emplace_back("TORCH_NCCL_DEBUG_INFO_PIPE_FILE",
                             node_dir + "/" + std::string(kFrPipePrefix));
        }
        *dump_dir_needed = true;
    }
    return out;
}

}  // namespace autoheal
