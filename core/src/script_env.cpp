#include "autoheal/core/script_env.h"

namespace autoheal {
namespace {

// Values in a log line are quoted when they hold spaces, quotes or are empty.
void Append(std::string& out, std::string_view key, std::string_view value) {
    if (!out.empty()) out += ' ';
    out += key;
    out += '=';
    bool plain = !value.empty();
    for (char c : value) {
        if (c == ' ' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
            plain = false;
        }
    }
    if (plain) {
        out += value;
        return;
    }
    out += '"';
    for (char c : value) {
        if (c == '"' || c == '\\') out += '\\';
        out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    }
    out += '"';
}

}  // namespace

ScriptContext ReadScriptContext(const EnvLookup& lookup) {
    ScriptContext ctx;
    auto get = [&](std::string_view name) { return lookup(name).value_or(""); };
    ctx.job_id = get("SLURM_JOB_ID");
    ctx.node = get("SLURMD_NODENAME");
    ctx.user = get("SLURM_JOB_USER");
    ctx.uid = get("SLURM_JOB_UID");
    ctx.partition = get("SLURM_JOB_PARTITION");
    ctx.nodelist = get("SLURM_JOB_NODELIST");
    if (ctx.nodelist.empty()) ctx.nodelist = get("SLURM_NODELIST");
    ctx.job_gpus = get("SLURM_JOB_GPUS");
    ctx.restart_count = get("SLURM_JOB_RESTART_COUNT");
    ctx.exit_code = get("SLURM_JOB_EXIT_CODE");
    ctx.script_context = get("SLURM_SCRIPT_CONTEXT");
    ctx.options = JobOptionsFromEnv(lookup, kSpankEnvPrefix, &ctx.problems);
    return ctx;
}

std::string DescribeScriptContext(const ScriptContext& ctx) {
    std::string out;
    Append(out, "job", ctx.job_id);
    if (!ctx.node.empty()) Append(out, "node", ctx.node);
    Append(out, "nodelist", ctx.nodelist);
    Append(out, "user", ctx.user);
    if (!ctx.job_gpus.empty()) Append(out, "gpus", ctx.job_gpus);
    if (!ctx.restart_count.empty()) Append(out, "restart_count", ctx.restart_count);
    if (!ctx.exit_code.empty()) Append(out, "exit_code", ctx.exit_code);
    const JobOptions& o = ctx.options;
    Append(out, "auto_resume", o.auto_resume ? std::to_string(*o.auto_resume) : "off");
    Append(out, "ckpt_dir", o.ckpt_dir.value_or(""));
    Append(out, "health_check",
           o.health_check ? std::string(HealthTierName(*o.health_check)) : "default");
    return out;
}

}  // namespace autoheal
